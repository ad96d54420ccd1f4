//! Outbound HTTP for plugins: the `http` import (grant `"http"`, since `palaver:plugin@0.1.3`), the manifest's
//! `[http]` section, its allow-list with the per-tenant narrowing, and the runtime's two shared clients.
//!
//! **Why a narrow import rather than `wasi:http`.** The linker defines no WASI at all, so a plugin has no ambient
//! capability; `wasi:http` would bring `wasi:io` streams, pollables and resources with it, a far larger surface
//! to cap and to keep bounded. One `send` that takes a whole request and returns a whole response lets the host
//! enforce in one place the allow-list, the methods, the size caps, the number of requests per call, no redirects
//! and the call's deadline (which epoch interruption cannot enforce while the host awaits).
//!
//! **Trust model.** The operator's allow-list (`[http] allow` in the manifest) is the trust boundary; a tenant can
//! only narrow it (`http_allow` in its choice). Entries are host names, exact or `*.`-wildcards, and IP literals,
//! each with an optional scheme and port. A host *name* must resolve to public addresses only, unless the section
//! says `private_addresses = true`: so a listed name (or a wildcard's subdomain) cannot be pointed by its DNS at
//! loopback, private, link-local or other internal addresses (DNS rebinding). Even with `private_addresses`, a
//! name never reaches a link-local address (169.254.0.0/16, fe80::/10: cloud metadata endpoints live there). An IP
//! literal in the list is the operator's explicit choice and is connected to as listed, link-local included. No
//! proxy from the environment is used.
//!
//! **Not buffered.** A request leaves when the plugin makes it. A call whose key-value writes met a concurrent
//! call's runs again (`dispatch.rs`, up to four runs), and its requests with it; so the runs of one call share its
//! count against `max_requests`.

use crate::bindings::palaver::plugin::http as wit;
use crate::store::StoreData;
use prometheus_client::metrics::histogram::Histogram;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The methods the `http` interface knows.
pub(crate) const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

/// Request headers the host sets or that only make sense hop by hop: a plugin may not set them.
const FORBIDDEN_HEADERS: [&str; 10] = [
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// The most entries an allow-list may have.
const MAX_ALLOW: usize = 64;
/// The most headers one request may carry.
const MAX_HEADERS: usize = 64;
/// The longest URL a request may have.
const MAX_URL: usize = 8 << 10;

/// The manifest's `[http]` section, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// The hosts the plugin may reach: `host`, `host:port`, `*.domain`, an IP literal (`[v6]` in brackets), each
    /// optionally prefixed with `http://` or `https://`. Required and non-empty.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Requests per call, 1 to 32.
    #[serde(default = "default_max_requests")]
    pub max_requests: u32,
    /// The largest request (body plus header names and values), at most 1 MiB.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: usize,
    /// The largest response (header names and values plus the body), at most 4 MiB.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// How long one request may take, 1 to 60000 ms; never past the call's deadline either.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The methods the plugin may use, of `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`.
    #[serde(default = "default_methods")]
    pub methods: Vec<String>,
    /// Whether a host *name* of the list may resolve to loopback, private and other non-public addresses; never to
    /// link-local ones (169.254.0.0/16, fe80::/10). IP literals in the list are always connected to as listed.
    #[serde(default)]
    pub private_addresses: bool,
}

fn default_max_requests() -> u32 {
    4
}

fn default_max_request_bytes() -> usize {
    64 << 10
}

fn default_max_response_bytes() -> usize {
    256 << 10
}

fn default_timeout_ms() -> u64 {
    2000
}

fn default_methods() -> Vec<String> {
    METHODS.iter().map(|m| (*m).to_owned()).collect()
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            allow: Vec::new(),
            max_requests: default_max_requests(),
            max_request_bytes: default_max_request_bytes(),
            max_response_bytes: default_max_response_bytes(),
            timeout_ms: default_timeout_ms(),
            methods: default_methods(),
            private_addresses: false,
        }
    }
}

impl HttpSection {
    /// The section checked and parsed, or why it is refused.
    pub(crate) fn policy(&self) -> Result<HttpPolicy, String> {
        let allow = AllowList::parse(&self.allow).map_err(|e| format!("[http] allow: {e}"))?;
        if allow.is_empty() {
            return Err("[http] allow must list at least one host".to_owned());
        }
        if !(1..=32).contains(&self.max_requests) {
            return Err(format!("[http] max_requests is {}: it must be 1 to 32", self.max_requests));
        }
        if self.max_request_bytes > 1 << 20 {
            return Err(format!("[http] max_request_bytes is {}: at most 1 MiB", self.max_request_bytes));
        }
        if self.max_response_bytes > 4 << 20 {
            return Err(format!("[http] max_response_bytes is {}: at most 4 MiB", self.max_response_bytes));
        }
        if !(1..=60_000).contains(&self.timeout_ms) {
            return Err(format!("[http] timeout_ms is {}: it must be 1 to 60000", self.timeout_ms));
        }
        if self.methods.is_empty() {
            return Err("[http] methods must name at least one method".to_owned());
        }
        let mut methods = Vec::new();
        for m in &self.methods {
            let upper = m.to_ascii_uppercase();
            if !METHODS.contains(&upper.as_str()) {
                return Err(format!("[http] methods: {m:?} is not one of {}", METHODS.join(", ")));
            }
            if !methods.contains(&upper) {
                methods.push(upper);
            }
        }
        Ok(HttpPolicy {
            allow,
            methods,
            max_requests: self.max_requests,
            max_request_bytes: self.max_request_bytes,
            max_response_bytes: self.max_response_bytes,
            timeout: Duration::from_millis(self.timeout_ms),
            private_addresses: self.private_addresses,
        })
    }
}

/// A manifest's `[http]` section, checked: what every request of the plugin is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpPolicy {
    pub(crate) allow: AllowList,
    /// Upper-case, of [`METHODS`].
    pub(crate) methods: Vec<String>,
    pub(crate) max_requests: u32,
    pub(crate) max_request_bytes: usize,
    pub(crate) max_response_bytes: usize,
    pub(crate) timeout: Duration,
    pub(crate) private_addresses: bool,
}

/// A URL scheme the import speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// The host part of an allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// This name exactly (lower-case, no trailing dot).
    Exact(String),
    /// Any name strictly below this domain (`*.example.org` matches `a.example.org`, not `example.org`).
    Below(String),
    Ip(IpAddr),
}

/// One allow-list entry: `[scheme://]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowEntry {
    /// `None`: http and https.
    scheme: Option<Scheme>,
    host: HostPattern,
    /// `None`: the scheme's default port (80 or 443).
    port: Option<u16>,
}

/// A request's destination, as matched against entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    scheme: Scheme,
    /// A lower-case name without a trailing dot, or an IP address.
    host: TargetHost,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TargetHost {
    Name(String),
    Ip(IpAddr),
}

impl AllowEntry {
    /// Parses `[http://|https://]host[:port]`: a host name (ASCII, punycode for IDNs), `*.` and a domain of at
    /// least two labels, an IPv4 address, or an IPv6 address in brackets.
    pub(crate) fn parse(text: &str) -> Result<AllowEntry, String> {
        let bad = |why: &str| Err(format!("{text:?}: {why}"));
        if text.is_empty() || text.len() > 300 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad("an entry is a host[:port] without spaces");
        }
        let lower = text.to_ascii_lowercase();
        let (scheme, rest) = if let Some(r) = lower.strip_prefix("https://") {
            (Some(Scheme::Https), r)
        } else if let Some(r) = lower.strip_prefix("http://") {
            (Some(Scheme::Http), r)
        } else if lower.contains("://") {
            return bad("the scheme may only be http:// or https://");
        } else {
            (None, lower.as_str())
        };
        if rest.contains(['/', '?', '#', '@', '\\']) {
            return bad("an entry is [scheme://]host[:port], without a path, query or user");
        }
        let port = |p: &str| match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{text:?}: {p:?} is not a port")),
        };
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let Some((ip, after)) = r.split_once(']') else { return bad("an IPv6 address ends with ]") };
            let Ok(ip) = ip.parse::<Ipv6Addr>() else { return bad("not an IPv6 address") };
            let port = match after {
                "" => None,
                p => Some(port(p.strip_prefix(':').ok_or_else(|| format!("{text:?}: junk after ]"))?)?),
            };
            (HostPattern::Ip(IpAddr::V6(ip)), port)
        } else {
            let (h, p) = match rest.split_once(':') {
                Some((h, p)) => (h, Some(port(p)?)),
                None => (rest, None),
            };
            (parse_host(h).map_err(|why| format!("{text:?}: {why}"))?, p)
        };
        Ok(AllowEntry { scheme, host, port })
    }

    fn matches(&self, t: &Target) -> bool {
        let scheme_ok = self.scheme.is_none_or(|s| s == t.scheme);
        let port_ok = match self.port {
            Some(p) => p == t.port,
            None => t.port == t.scheme.default_port(),
        };
        let host_ok = match (&self.host, &t.host) {
            (HostPattern::Exact(a), TargetHost::Name(b)) => a == b,
            (HostPattern::Below(d), TargetHost::Name(b)) => {
                b.len() > d.len() + 1 && b.ends_with(d.as_str()) && b.as_bytes()[b.len() - d.len() - 1] == b'.'
            }
            (HostPattern::Ip(a), TargetHost::Ip(b)) => a == b,
            _ => false,
        };
        scheme_ok && port_ok && host_ok
    }

    /// Whether everything `inner` matches, this entry matches too (conservatively: the ports must be written
    /// alike).
    fn covers(&self, inner: &AllowEntry) -> bool {
        let scheme_ok = match (self.scheme, inner.scheme) {
            (None, _) => true,
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
        };
        let host_ok = match (&self.host, &inner.host) {
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Below(d), HostPattern::Exact(b)) => is_below(b, d),
            (HostPattern::Below(d), HostPattern::Below(e)) => d == e || is_below(e, d),
            (HostPattern::Ip(a), HostPattern::Ip(b)) => a == b,
            _ => false,
        };
        scheme_ok && self.port == inner.port && host_ok
    }
}

fn is_below(name: &str, domain: &str) -> bool {
    name.len() > domain.len() + 1 && name.ends_with(domain) && name.as_bytes()[name.len() - domain.len() - 1] == b'.'
}

/// A host name, `*.domain` or an IPv4 address, lower-case already.
fn parse_host(h: &str) -> Result<HostPattern, String> {
    let h = h.strip_suffix('.').unwrap_or(h);
    if let Ok(ip) = h.parse::<Ipv4Addr>() {
        return Ok(HostPattern::Ip(IpAddr::V4(ip)));
    }
    if let Some(domain) = h.strip_prefix("*.") {
        check_name(domain)?;
        if !domain.contains('.') {
            return Err("a wildcard covers a domain of at least two labels (*.example.org)".to_owned());
        }
        return Ok(HostPattern::Below(domain.to_owned()));
    }
    check_name(h)?;
    Ok(HostPattern::Exact(h.to_owned()))
}

/// A DNS name in ASCII: labels of 1 to 63 letters, digits and dashes, not starting or ending with a dash, the
/// last not all digits (that would be an IP address written short).
fn check_name(name: &str) -> Result<(), String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err("not a host name (ASCII letters, digits, dashes and dots; punycode for other scripts)".to_owned());
    }
    if name.rsplit('.').next().is_some_and(|l| l.chars().all(|c| c.is_ascii_digit())) {
        return Err("not a host name; write an IPv4 address in full (a.b.c.d)".to_owned());
    }
    Ok(())
}

/// An allow-list: the entries as written, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AllowList {
    entries: Vec<AllowEntry>,
}

impl AllowList {
    pub(crate) fn parse(texts: &[String]) -> Result<AllowList, String> {
        if texts.len() > MAX_ALLOW {
            return Err(format!("at most {MAX_ALLOW} entries"));
        }
        Ok(AllowList { entries: texts.iter().map(|t| AllowEntry::parse(t)).collect::<Result<_, _>>()? })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn matches(&self, t: &Target) -> bool {
        self.entries.iter().any(|e| e.matches(t))
    }

    /// Checks that every entry of `narrower` (a tenant's) is within this list (the manifest's).
    pub(crate) fn check_within(&self, narrower: &[String]) -> Result<AllowList, String> {
        let list = AllowList::parse(narrower)?;
        for (entry, text) in list.entries.iter().zip(narrower) {
            if !self.entries.iter().any(|m| m.covers(entry)) {
                return Err(format!("{text:?} is not within the plugin's allow-list"));
            }
        }
        Ok(list)
    }
}

/// The destination of `url`, or why it cannot be one: `Err(true)` for a destination the import never reaches (a
/// scheme other than http and https: `denied`), `Err(false)` for a malformed URL (`invalid`).
fn target(url: &reqwest::Url) -> Result<Target, (bool, String)> {
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err((true, format!("scheme {other:?} is not allowed: only http and https"))),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err((false, "a URL with user info is refused: send credentials in a header".to_owned()));
    }
    let Some(host) = url.host_str() else { return Err((false, "the URL has no host".to_owned())) };
    // The url crate writes IPv4 in full, IPv6 in brackets and names in lower-case punycode.
    let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        TargetHost::Ip(IpAddr::V6(v6.parse().map_err(|_| (false, format!("bad IPv6 host {host:?}")))?))
    } else if let Ok(v4) = host.parse::<Ipv4Addr>() {
        TargetHost::Ip(IpAddr::V4(v4))
    } else {
        TargetHost::Name(host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase())
    };
    let port = url.port_or_known_default().unwrap_or(scheme.default_port());
    Ok(Target { scheme, host, port })
}

/// How one request ended, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpOutcome {
    Ok,
    Denied,
    Invalid,
    Limit,
    Timeout,
    Failed,
}

impl HttpOutcome {
    pub(crate) const ALL: [HttpOutcome; 6] = [
        HttpOutcome::Ok,
        HttpOutcome::Denied,
        HttpOutcome::Invalid,
        HttpOutcome::Limit,
        HttpOutcome::Timeout,
        HttpOutcome::Failed,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HttpOutcome::Ok => "ok",
            HttpOutcome::Denied => "denied",
            HttpOutcome::Invalid => "invalid",
            HttpOutcome::Limit => "limit",
            HttpOutcome::Timeout => "timeout",
            HttpOutcome::Failed => "failed",
        }
    }

    fn of(r: &Result<wit::Response, wit::HttpError>) -> HttpOutcome {
        match r {
            Ok(_) => HttpOutcome::Ok,
            Err(wit::HttpError::Denied(_)) => HttpOutcome::Denied,
            Err(wit::HttpError::Invalid(_)) => HttpOutcome::Invalid,
            Err(wit::HttpError::Limit(_)) => HttpOutcome::Limit,
            Err(wit::HttpError::Timeout) => HttpOutcome::Timeout,
            Err(wit::HttpError::Failed(_)) => HttpOutcome::Failed,
        }
    }
}

/// Latency bucket bounds of outbound requests, in seconds: 1 ms to 10 s.
const BUCKETS: [f64; 13] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// One plugin's outbound requests: by outcome, and how long they took.
pub(crate) struct HttpMetrics {
    outcomes: [AtomicU64; HttpOutcome::ALL.len()],
    pub(crate) latency: Histogram,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        HttpMetrics { outcomes: Default::default(), latency: Histogram::new(BUCKETS) }
    }
}

impl HttpMetrics {
    fn record(&self, outcome: HttpOutcome, took: Duration) {
        self.outcomes[outcome as usize].fetch_add(1, Ordering::Relaxed);
        self.latency.observe(took.as_secs_f64());
    }

    pub(crate) fn count(&self, outcome: HttpOutcome) -> u64 {
        self.outcomes[outcome as usize].load(Ordering::Relaxed)
    }
}

/// What a call may reach over HTTP: the plugin's policy, the tenant's narrowing, the shared clients and the
/// plugin's counters.
#[derive(Clone)]
pub(crate) struct HttpScope {
    pub(crate) policy: Arc<HttpPolicy>,
    /// The tenant's own list (`None`: the manifest's applies alone). A request must match both.
    pub(crate) tenant: Option<Arc<AllowList>>,
    pub(crate) client: Arc<HttpClient>,
    pub(crate) metrics: Arc<HttpMetrics>,
    /// The requests the call sent so far, over all its runs (a call runs again after a key-value conflict, and its
    /// requests are not buffered): what `max_requests` bounds.
    pub(crate) sent: Arc<AtomicU32>,
}

/// The outbound HTTP of one run of a call.
#[derive(Debug, Default)]
pub(crate) struct HttpCall {
    /// Set by the first `limit`: nothing more is sent in this run.
    closed: Option<String>,
}

/// The runtime's two HTTP clients, each built on first use and shared by every call, each with its own connection
/// pool: one for the plugins without `private_addresses`, whose resolver keeps public addresses only, and one for
/// those with it, whose resolver drops link-local addresses only. A client that could not be built is not
/// remembered: the next request tries again.
#[derive(Default)]
pub(crate) struct HttpClient {
    public: OnceLock<reqwest::Client>,
    any: OnceLock<reqwest::Client>,
}

impl HttpClient {
    fn get(&self, private_addresses: bool) -> Result<&reqwest::Client, String> {
        let cell = if private_addresses { &self.any } else { &self.public };
        if let Some(client) = cell.get() {
            return Ok(client);
        }
        // Two first requests at once may both build one; the first stored is kept, the other dropped.
        let built = build_client(Reach::of(private_addresses))?;
        Ok(cell.get_or_init(|| built))
    }
}

fn build_client(reach: Reach) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .user_agent(concat!("palaver-plugin/", env!("CARGO_PKG_VERSION")))
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(8)
        .dns_resolver(Arc::new(Filtered(reach)))
        .build()
        .map_err(|e| format!("the HTTP client could not be built: {e}"))
}

/// Which resolved addresses a host *name* may reach. IP literals are not resolved, so they are not filtered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Public addresses only: the default.
    Public,
    /// Any address but a link-local one: `private_addresses = true`.
    NotLinkLocal,
}

impl Reach {
    fn of(private_addresses: bool) -> Reach {
        if private_addresses { Reach::NotLinkLocal } else { Reach::Public }
    }

    fn admits(self, ip: IpAddr) -> bool {
        match self {
            Reach::Public => is_public(ip),
            Reach::NotLinkLocal => !is_link_local(ip),
        }
    }
}

/// Resolves names with the system's resolver and keeps the addresses its [`Reach`] admits; a name with none left
/// fails with [`PrivateAddress`], which the import reports as `denied`.
struct Filtered(Reach);

#[derive(Debug)]
struct PrivateAddress {
    host: String,
    reach: Reach,
}

impl std::fmt::Display for PrivateAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reach {
            Reach::Public => {
                write!(f, "{} resolves to no public address (the manifest does not set private_addresses)", self.host)
            }
            Reach::NotLinkLocal => write!(
                f,
                "{} resolves to link-local addresses only, which a host name never reaches (list the IP itself)",
                self.host
            ),
        }
    }
}

impl std::error::Error for PrivateAddress {}

/// The addresses of `host` that `reach` admits, or why there are none.
async fn resolve(host: &str, reach: Reach) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
    let kept: Vec<SocketAddr> = found.into_iter().filter(|a| reach.admits(a.ip())).collect();
    if kept.is_empty() {
        return Err(Box::new(PrivateAddress { host: host.to_owned(), reach }));
    }
    Ok(kept)
}

impl reqwest::dns::Resolve for Filtered {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (host, reach) = (name.as_str().to_owned(), self.0);
        Box::pin(async move { Ok(Box::new(resolve(&host, reach).await?.into_iter()) as reqwest::dns::Addrs) })
    }
}

/// Whether `ip` is link-local (169.254.0.0/16, fe80::/10), or an IPv4-mapped IPv6 form of one.
fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6.to_ipv4_mapped().is_some_and(|v4| v4.is_link_local()) || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// Whether `ip` is a public unicast address: not loopback, private, link-local, shared (CGNAT), unspecified,
/// broadcast, multicast, documentation or reserved, nor an IPv6 form of one (IPv4-mapped or -compatible, NAT64,
/// site-local `fec0::/10`, unique local, Teredo `2001::/32`, or 6to4 `2002::/16` around a non-public IPv4).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            // 6to4 (2002::/16) carries the IPv4 address its relay forwards to in the next 32 bits.
            if s[0] == 0x2002 {
                let [a, b] = s[1].to_be_bytes();
                let [c, d] = s[2].to_be_bytes();
                return is_public(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                // Site-local, deprecated but still routed inside some networks.
                || (s[0] & 0xffc0) == 0xfec0
                // Teredo: the client's IPv4 is inside, obfuscated; a tunnel no receiver needs.
                || (s[0] == 0x2001 && s[1] == 0)
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x0064 && s[1] == 0xff9b)
                || s[0] == 0)
        }
    }
}

/// When a call with `deadline` from now must stop waiting on the host's I/O: a tenth of the deadline (at most
/// 10 ms) before it, so that the plugin still has time to handle a `timeout` before its own deadline traps it.
pub(crate) fn wait_until(deadline: Duration) -> Instant {
    let reserve = (deadline / 10).min(Duration::from_millis(10));
    Instant::now() + deadline.saturating_sub(reserve)
}

type HttpResult = Result<wit::Response, wit::HttpError>;

/// A request checked against the policy, ready to send.
struct Prepared {
    method: reqwest::Method,
    url: reqwest::Url,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Checks `req` against what the call may do: `invalid` for a malformed request, `denied` for a destination or
/// method outside the policy (or the tenant's list), `limit` for a request over the size cap.
fn prepare(scope: &HttpScope, req: wit::Request) -> Result<Prepared, wit::HttpError> {
    use wit::HttpError::{Denied, Invalid, Limit};
    let p = &scope.policy;
    if !METHODS.contains(&req.method.as_str()) {
        return Err(Invalid(format!("method {:?} is not one of {}", req.method, METHODS.join(", "))));
    }
    if req.url.len() > MAX_URL {
        return Err(Invalid(format!("the URL is longer than {MAX_URL} bytes")));
    }
    let url = reqwest::Url::parse(&req.url).map_err(|e| Invalid(format!("bad URL {:?}: {e}", req.url)))?;
    let target = target(&url).map_err(|(denied, m)| if denied { Denied(m) } else { Invalid(m) })?;
    if req.headers.len() > MAX_HEADERS {
        return Err(Invalid(format!("at most {MAX_HEADERS} headers")));
    }
    let mut headers = HeaderMap::new();
    let mut size = req.body.len();
    for (name, value) in &req.headers {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| Invalid(format!("bad header name {name:?}")))?;
        if FORBIDDEN_HEADERS.contains(&n.as_str()) {
            return Err(Invalid(format!("header {:?} is the host's to set", n.as_str())));
        }
        let v = HeaderValue::from_str(value).map_err(|_| Invalid(format!("bad value of header {name:?}")))?;
        size += name.len() + value.len();
        headers.append(n, v);
    }
    let host = url.host_str().unwrap_or_default();
    if !p.allow.matches(&target) {
        return Err(Denied(format!("{}://{host}:{} is not in the plugin's allow-list", url.scheme(), target.port)));
    }
    if scope.tenant.as_ref().is_some_and(|t| !t.matches(&target)) {
        return Err(Denied(format!("{}://{host}:{} is not in the tenant's allow-list", url.scheme(), target.port)));
    }
    if !p.methods.contains(&req.method) {
        return Err(Denied(format!("method {} is not allowed for this plugin", req.method)));
    }
    if size > p.max_request_bytes {
        return Err(Limit(format!("the request is {size} bytes: at most {} (body and headers)", p.max_request_bytes)));
    }
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).map_err(|e| Invalid(e.to_string()))?;
    Ok(Prepared { method, url, headers, body: req.body })
}

/// Sends one request for a call: every check, the count, the time left, the capped response.
async fn send(scope: &HttpScope, call: &mut HttpCall, wait_until: Option<Instant>, req: wit::Request) -> HttpResult {
    use wit::HttpError::{Failed, Limit, Timeout};
    if let Some(why) = &call.closed {
        return Err(Limit(format!("{why}; nothing more is sent in this call")));
    }
    let p = &scope.policy;
    let prepared = match prepare(scope, req) {
        Ok(r) => r,
        Err(Limit(why)) => {
            call.closed = Some(why.clone());
            return Err(Limit(why));
        }
        Err(e) => return Err(e),
    };
    if scope.sent.load(Ordering::Relaxed) >= p.max_requests {
        let why = format!("at most {} requests per call", p.max_requests);
        call.closed = Some(why.clone());
        return Err(Limit(why));
    }
    let left = wait_until.map_or(p.timeout, |t| t.saturating_duration_since(Instant::now()));
    let wait = p.timeout.min(left);
    if wait.is_zero() {
        return Err(Timeout);
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Failed("outbound HTTP needs the host's async runtime, and this call has none".to_owned()));
    }
    let client = scope.client.get(p.private_addresses).map_err(Failed)?;
    scope.sent.fetch_add(1, Ordering::Relaxed);
    let cap = p.max_response_bytes;
    let exchange = async {
        let Prepared { method, url, headers, body } = prepared;
        let mut resp = client.request(method, url).headers(headers).body(body).send().await.map_err(failure)?;
        let status = resp.status().as_u16();
        let too_big = || Limit(format!("the response is larger than {cap} bytes (header names and values, and body)"));
        // The headers count against the cap too: they are copied into the guest like the body.
        let header_bytes: usize = resp.headers().iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
        let Some(body_cap) = cap.checked_sub(header_bytes) else { return Err(too_big()) };
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        if resp.content_length().is_some_and(|n| n > body_cap as u64) {
            return Err(too_big());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(failure)? {
            if body.len() + chunk.len() > body_cap {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(wit::Response { status, headers, body })
    };
    let result = tokio::time::timeout(wait, exchange).await.unwrap_or(Err(Timeout));
    if let Err(Limit(why)) = &result {
        call.closed = Some(why.clone());
    }
    result
}

/// A transport error as the import reports it; a name that resolved to private addresses only is `denied`.
fn failure(e: reqwest::Error) -> wit::HttpError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut chain = Vec::new();
    while let Some(s) = source {
        if let Some(p) = s.downcast_ref::<PrivateAddress>() {
            return wit::HttpError::Denied(p.to_string());
        }
        let text = s.to_string();
        if chain.last() != Some(&text) {
            chain.push(text);
        }
        source = s.source();
    }
    if e.is_timeout() {
        return wit::HttpError::Timeout;
    }
    wit::HttpError::Failed(chain.join(": "))
}

impl wit::Host for StoreData {
    async fn send(&mut self, req: wit::Request) -> wasmtime::Result<HttpResult> {
        self.count_host_call()?;
        let Some(scope) = self.scope.http.clone() else {
            // Golden fixtures run with no outbound access: a fixture must not reach the network.
            return Ok(Err(wit::HttpError::Denied("outbound HTTP is off in this call (a golden fixture)".to_owned())));
        };
        let started = Instant::now();
        let (method, url) = (req.method.clone(), req.url.clone());
        let result = send(&scope, &mut self.http, self.wait_until, req).await;
        let outcome = HttpOutcome::of(&result);
        scope.metrics.record(outcome, started.elapsed());
        if outcome != HttpOutcome::Ok {
            let s = &self.scope;
            tracing::debug!(
                tenant = %s.tenant, plugin = %s.plugin, request = %s.request_id, %method, url = %url.chars().take(200).collect::<String>(),
                outcome = outcome.as_str(), "plugin HTTP request not answered"
            );
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> AllowList {
        AllowList::parse(&entries.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    fn allows(l: &AllowList, url: &str) -> bool {
        l.matches(&target(&reqwest::Url::parse(url).unwrap()).unwrap())
    }

    #[test]
    fn exact_hosts_match_on_default_ports_unless_a_port_is_given() {
        let l = list(&["hooks.example.com", "127.0.0.1:8080", "https://secure.example.com", "[::1]:9000"]);
        assert!(allows(&l, "https://hooks.example.com/x"));
        assert!(allows(&l, "http://HOOKS.example.com./x"), "case and a trailing dot do not matter");
        assert!(allows(&l, "https://hooks.example.com:443/x"));
        assert!(!allows(&l, "https://hooks.example.com:8443/x"), "another port");
        assert!(!allows(&l, "http://hooks.example.com:443/x"), "443 is not http's default");
        assert!(!allows(&l, "https://evil.hooks.example.com/"), "no subdomains without a wildcard");
        assert!(!allows(&l, "https://hooks.example.com.evil.org/"));
        assert!(allows(&l, "http://127.0.0.1:8080/"));
        assert!(!allows(&l, "http://127.0.0.1/"), "a listed port is the only one");
        assert!(!allows(&l, "http://127.0.0.1:8081/"));
        assert!(allows(&l, "http://127.1:8080/"), "the URL's IPv4 is normalised before matching");
        assert!(allows(&l, "https://secure.example.com/"));
        assert!(!allows(&l, "http://secure.example.com/"), "a scheme in the entry is the only one");
        assert!(allows(&l, "http://[::1]:9000/"));
        assert!(!allows(&l, "http://[::2]:9000/"));
    }

    #[test]
    fn wildcards_match_strictly_below_their_domain() {
        let l = list(&["*.example.org"]);
        assert!(allows(&l, "https://a.example.org/"));
        assert!(allows(&l, "https://a.b.example.org/"));
        assert!(!allows(&l, "https://example.org/"));
        assert!(!allows(&l, "https://aexample.org/"));
        assert!(!allows(&l, "https://a.example.org.evil.net/"));
    }

    #[test]
    fn malformed_entries_are_refused() {
        for bad in [
            "",
            "*",
            "*.com",
            "a.*.com",
            "ftp://example.com",
            "example.com/path",
            "user@example.com",
            "example.com:0",
            "example.com:99999",
            "exa mple.com",
            "-bad.example.com",
            "[::1",
            "[zz]:80",
            "127.1",
            "ex_ample.com",
            "bücher.example",
        ] {
            assert!(AllowEntry::parse(bad).is_err(), "accepted {bad:?}");
        }
        assert!(AllowList::parse(&vec!["a.example".to_owned(); 65]).is_err());
    }

    #[test]
    fn a_tenant_list_must_lie_within_the_manifests() {
        let m = list(&["hooks.example.com", "*.example.org", "127.0.0.1:8080", "https://secure.example.net"]);
        let ok = |t: &[&str]| m.check_within(&t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert!(ok(&["hooks.example.com"]).is_ok());
        assert!(ok(&["https://hooks.example.com"]).is_ok(), "a scheme narrows");
        assert!(ok(&["a.example.org", "*.b.example.org", "*.example.org"]).is_ok());
        assert!(ok(&["127.0.0.1:8080"]).is_ok());
        assert!(ok(&["https://secure.example.net"]).is_ok());
        assert!(ok(&[]).is_ok(), "an empty list allows nothing");
        for outside in [
            "other.example.com",
            "hooks.example.com:8443",
            "example.org",
            "*.org",
            "127.0.0.1",
            "127.0.0.1:8081",
            "secure.example.net",
            "http://secure.example.net",
        ] {
            let e = ok(&[outside]).unwrap_err();
            assert!(e.contains("not within") || e.contains(outside), "{outside}: {e}");
        }
        assert!(ok(&["not a host"]).is_err());
    }

    #[test]
    fn sections_are_checked() {
        let s = |allow: &[&str]| HttpSection {
            allow: allow.iter().map(|a| (*a).to_owned()).collect(),
            ..HttpSection::default()
        };
        let p = s(&["127.0.0.1"]).policy().unwrap();
        assert_eq!((p.max_requests, p.max_request_bytes, p.max_response_bytes), (4, 64 << 10, 256 << 10));
        assert_eq!(p.timeout, Duration::from_secs(2));
        assert_eq!(p.methods.len(), 6);
        assert!(s(&[]).policy().unwrap_err().contains("at least one host"));
        for (edit, why) in [
            (HttpSection { max_requests: 0, ..s(&["a.example"]) }, "max_requests"),
            (HttpSection { max_requests: 33, ..s(&["a.example"]) }, "max_requests"),
            (HttpSection { max_request_bytes: 2 << 20, ..s(&["a.example"]) }, "max_request_bytes"),
            (HttpSection { max_response_bytes: 5 << 20, ..s(&["a.example"]) }, "max_response_bytes"),
            (HttpSection { timeout_ms: 0, ..s(&["a.example"]) }, "timeout_ms"),
            (HttpSection { methods: vec![], ..s(&["a.example"]) }, "methods"),
            (HttpSection { methods: vec!["CONNECT".into()], ..s(&["a.example"]) }, "CONNECT"),
        ] {
            let e = edit.policy().unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
        let p = HttpSection { methods: vec!["post".into(), "POST".into()], ..s(&["a.example"]) }.policy().unwrap();
        assert_eq!(p.methods, ["POST"]);
    }

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
            "fec0::1",
            "feff::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::1",
            "2002:0a00:0001::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:1.1.1.1", "2002:0101:0101::1"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn private_addresses_still_keep_names_off_link_local() {
        for link_local in ["169.254.169.254", "169.254.0.1", "fe80::1", "febf::1", "::ffff:169.254.169.254"] {
            let ip: IpAddr = link_local.parse().unwrap();
            assert!(!Reach::NotLinkLocal.admits(ip) && !Reach::Public.admits(ip), "{link_local}");
        }
        for private in ["127.0.0.1", "10.0.0.1", "192.168.1.1", "::1", "fc00::1", "fec0::1"] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(Reach::NotLinkLocal.admits(ip) && !Reach::Public.admits(ip), "{private}");
        }
        assert_eq!((Reach::of(true), Reach::of(false)), (Reach::NotLinkLocal, Reach::Public));
    }

    #[tokio::test]
    async fn names_resolve_to_the_addresses_their_reach_admits() {
        // The system resolver answers an address written as a name with itself, which stands in for a DNS answer.
        let err = resolve("169.254.169.254", Reach::NotLinkLocal).await.unwrap_err().to_string();
        assert!(err.contains("link-local"), "{err}");
        let err = resolve("127.0.0.1", Reach::Public).await.unwrap_err().to_string();
        assert!(err.contains("no public address"), "{err}");
        let found = resolve("127.0.0.1", Reach::NotLinkLocal).await.unwrap();
        assert_eq!(found.iter().map(SocketAddr::ip).collect::<Vec<_>>(), [IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }

    #[test]
    fn a_built_client_is_kept() {
        let clients = HttpClient::default();
        let a: *const reqwest::Client = clients.get(false).unwrap();
        let b: *const reqwest::Client = clients.get(false).unwrap();
        assert_eq!(a, b, "built once");
        let c: *const reqwest::Client = clients.get(true).unwrap();
        assert_ne!(a, c, "two clients, two pools");
    }

    #[test]
    fn urls_become_targets_or_reasons() {
        let t = |u: &str| target(&reqwest::Url::parse(u).unwrap());
        assert!(matches!(t("ftp://example.com/"), Err((true, _))));
        assert!(matches!(t("http://user:pw@example.com/"), Err((false, _))));
        assert!(matches!(t("http://user@example.com/"), Err((false, _))));
        assert_eq!(t("https://Example.COM/").unwrap().host, TargetHost::Name("example.com".to_owned()));
        assert_eq!(t("https://example.com/").unwrap().port, 443);
    }
}
