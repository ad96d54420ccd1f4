//! `access-rules`, the example gate (world `gate`): the tenant decides where its users may log in from and how
//! its groups may be joined.
//!
//! - `on-login`: with `login_allow_cidrs` set, a login is allowed only from an address inside one of its networks
//!   (IPv4 or IPv6 CIDRs, or single addresses); any other login, or one whose address the node does not know, is
//!   refused with 403. An empty list allows every login.
//! - `before-subscribe`, for groups only: a join to a group of `invite_only_groups` is refused with 403 (members
//!   an owner or admin added are attached, not joining, so the host does not ask); a new member of a group of
//!   `read_only_joins` joins without `W`.
//!
//! A list entry that is no network matches nothing, and is logged once per settings change: a typo can lock
//! logins out (the host's admin API, which no gate guards, puts it right) but never lets one in.

use palaver_plugin_sdk::{Context, Gate, Host, Join, JoinVerdict, Level, Login, Rejection, TopicKind};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::IpAddr;

/// The tenant's settings, as the manifest declares them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    login_allow_cidrs: Vec<String>,
    invite_only_groups: Vec<String>,
    read_only_joins: Vec<String>,
}

/// A network: an address and how many of its leading bits count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// `10.0.0.0/8`, `2001:db8::/32`, or a single address (`10.1.2.3`, `::1`). An IPv4 network written as IPv6
    /// (`::ffff:10.0.0.0/104`) becomes the IPv4 one, since the addresses it is matched with are read that way.
    pub fn parse(s: &str) -> Option<Cidr> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (s, None),
        };
        let net: IpAddr = addr.parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return None;
        }
        match net {
            IpAddr::V6(v6) if prefix >= 96 => match v6.to_ipv4_mapped() {
                Some(v4) => Some(Cidr { net: IpAddr::V4(v4), prefix: prefix - 96 }),
                None => Some(Cidr { net, prefix }),
            },
            _ => Some(Cidr { net, prefix }),
        }
    }

    /// Whether `ip` is inside the network (an IPv4 address is never inside an IPv6 network, nor the reverse).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                same_prefix(u128::from(u32::from(n)), u128::from(u32::from(a)), 32, self.prefix)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => same_prefix(u128::from(n), u128::from(a), 128, self.prefix),
            _ => false,
        }
    }
}

/// Whether the first `prefix` of the `bits` low bits of `a` and `b` agree.
fn same_prefix(a: u128, b: u128, bits: u32, prefix: u8) -> bool {
    let prefix = u32::from(prefix);
    prefix == 0 || (a ^ b) >> (bits - prefix) == 0
}

/// The settings, read once per change.
#[derive(Debug, Default)]
struct Rules {
    /// Whether logins are restricted at all (the list is not empty, even if none of its entries parsed).
    restrict_logins: bool,
    networks: Vec<Cidr>,
    invite_only: BTreeSet<String>,
    read_only: BTreeSet<String>,
}

impl Rules {
    fn from(s: Settings) -> (Rules, Vec<String>) {
        let mut bad = Vec::new();
        let mut networks = Vec::new();
        for entry in &s.login_allow_cidrs {
            match Cidr::parse(entry) {
                Some(c) => networks.push(c),
                None => bad.push(entry.clone()),
            }
        }
        let rules = Rules {
            restrict_logins: !s.login_allow_cidrs.is_empty(),
            networks,
            invite_only: s.invite_only_groups.into_iter().collect(),
            read_only: s.read_only_joins.into_iter().collect(),
        };
        (rules, bad)
    }
}

/// The gate. Warm instances serve several tenants, so the parsed rules are kept with the settings text they came
/// from and parsed again whenever it differs.
#[derive(Default)]
pub struct AccessRules {
    cached: Option<(String, Rules)>,
}

impl AccessRules {
    /// The calling tenant's rules, or a refusal when its settings cannot be read (the host validates them against
    /// the schema, so this is a misconfiguration worth a retryable answer rather than a guess).
    fn rules<H: Host>(&mut self, cx: &mut Context<'_, H>) -> Result<&Rules, Rejection> {
        let text = cx.settings_text();
        if self.cached.as_ref().is_none_or(|(t, _)| *t != text) {
            let settings: Settings = serde_json::from_str(&text)
                .map_err(|e| Rejection::new(503, format!("the access rules cannot be read: {e}")))?;
            let (rules, bad) = Rules::from(settings);
            if !bad.is_empty() {
                cx.log(Level::Warn, &format!("login_allow_cidrs: not networks, matching nothing: {bad:?}"));
            }
            self.cached = Some((text, rules));
        }
        Ok(self.cached.as_ref().map(|(_, r)| r).expect("cached just above"))
    }
}

impl Gate for AccessRules {
    fn on_login<H: Host>(&mut self, cx: &mut Context<'_, H>, login: &Login) -> Result<(), Rejection> {
        let rules = self.rules(cx)?;
        if !rules.restrict_logins {
            return Ok(());
        }
        let Some(ip) = login.ip() else {
            return Err(Rejection::forbidden(
                "the client's address is unknown, and this tenant allows logins only from its own networks",
            ));
        };
        if rules.networks.iter().any(|n| n.contains(ip)) {
            Ok(())
        } else {
            Err(Rejection::forbidden(format!("logins from {ip} are not allowed for this tenant")))
        }
    }

    fn before_subscribe<H: Host>(&mut self, cx: &mut Context<'_, H>, join: &Join) -> JoinVerdict {
        if join.topic_kind != TopicKind::Group {
            return JoinVerdict::Allow;
        }
        let rules = match self.rules(cx) {
            Ok(r) => r,
            Err(refusal) => return JoinVerdict::Reject(refusal),
        };
        if rules.invite_only.contains(&join.topic) {
            return JoinVerdict::reject(
                403,
                format!("group {} is invite-only: ask an owner or an admin to add you", join.topic),
            );
        }
        if rules.read_only.contains(&join.topic) && join.given_has('W') {
            return JoinVerdict::restrict(join.given_without("W"));
        }
        JoinVerdict::Allow
    }
}

palaver_plugin_sdk::gate!(AccessRules);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::json;
    use palaver_plugin_sdk::testing::{Harness, run_gate_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");
    const ALICE: &str = "usrAQAAAAAAAAA";

    fn harness(settings: serde_json::Value) -> Harness<AccessRules> {
        let mut h = Harness::with_manifest(MANIFEST).unwrap();
        h.settings(settings);
        h
    }

    fn login(h: &mut Harness<AccessRules>, addr: &str) -> Result<(), Rejection> {
        h.on_login(&Login::new(ALICE, addr))
    }

    #[test]
    fn the_manifest_fixtures_pass() {
        assert_eq!(run_gate_fixtures::<AccessRules>(MANIFEST), Ok(9));
    }

    #[test]
    fn networks_parse_and_match() {
        let c = |s: &str| Cidr::parse(s).unwrap_or_else(|| panic!("{s}"));
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(c("10.0.0.0/8").contains(ip("10.255.0.1")));
        assert!(!c("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(c("192.168.1.7").contains(ip("192.168.1.7")), "an address is a /32");
        assert!(!c("192.168.1.7").contains(ip("192.168.1.8")));
        assert!(c("10.9.9.9/8").contains(ip("10.1.1.1")), "host bits of the network are ignored");
        assert!(c("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!c("0.0.0.0/0").contains(ip("::1")), "families never mix");
        assert!(c("2001:db8::/32").contains(ip("2001:db8:ffff::1")));
        assert!(!c("2001:db8::/32").contains(ip("2001:db9::1")));
        assert!(c("::/0").contains(ip("fe80::1")));
        assert!(c("::1").contains(ip("::1")));
        assert_eq!(c("::ffff:10.0.0.0/104"), c("10.0.0.0/8"), "a mapped IPv4 network is an IPv4 one");
        for bad in ["", "10.0.0.0/33", "2001:db8::/129", "10.0.0/8", "example.org", "10.0.0.0/x", "10.0.0.0/-1"] {
            assert_eq!(Cidr::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn logins_come_only_from_the_tenants_networks() {
        let mut h = harness(json!({ "login_allow_cidrs": ["10.0.0.0/8", "2001:db8::/32"] }));
        assert_eq!(login(&mut h, "10.1.2.3"), Ok(()));
        assert_eq!(login(&mut h, "::ffff:10.1.2.3"), Ok(()), "an IPv4 client on a dual-stack socket");
        assert_eq!(login(&mut h, "2001:db8::42"), Ok(()));
        let refused = login(&mut h, "192.0.2.1").unwrap_err();
        assert_eq!(refused.code, 403);
        assert!(refused.reason.contains("192.0.2.1"), "{refused:?}");
        assert_eq!(login(&mut h, "").unwrap_err().code, 403, "an unknown address is refused");
        let mut open = harness(json!({}));
        assert_eq!(login(&mut open, "192.0.2.1"), Ok(()));
        assert_eq!(login(&mut open, ""), Ok(()), "no networks: no rule");
    }

    #[test]
    fn a_broken_entry_matches_nothing_and_is_logged_once() {
        let mut h = harness(json!({ "login_allow_cidrs": ["10.0.0.0/33"] }));
        assert_eq!(login(&mut h, "10.1.2.3").unwrap_err().code, 403, "a typo never lets a login in");
        assert_eq!(login(&mut h, "10.1.2.3").unwrap_err().code, 403);
        assert_eq!(h.host.logs.iter().filter(|(l, _)| *l == Level::Warn).count(), 1, "{:?}", h.host.logs);
        h.settings(json!({ "login_allow_cidrs": ["10.0.0.0/8"] }));
        assert_eq!(login(&mut h, "10.1.2.3"), Ok(()), "the cache follows the settings");
    }

    #[test]
    fn joins_follow_the_groups_rules() {
        let mut h = harness(json!({ "invite_only_groups": ["grpClosed"], "read_only_joins": ["grpNews"] }));
        let join =
            |h: &mut Harness<AccessRules>, topic: &str, given: &str| h.before_subscribe(&Join::new(topic, given));
        assert_eq!(join(&mut h, "grpOpen", "JRWPS"), JoinVerdict::Allow);
        let JoinVerdict::Reject(r) = join(&mut h, "grpClosed", "JRWPS") else { panic!("expected a refusal") };
        assert_eq!(r.code, 403);
        assert!(r.reason.contains("invite-only"), "{r:?}");
        assert_eq!(join(&mut h, "grpNews", "JRWPS"), JoinVerdict::restrict("JRPS"));
        assert_eq!(join(&mut h, "grpNews", "JRP"), JoinVerdict::Allow, "nothing to take away");
        assert_eq!(join(&mut h, "p2pAbc", "JRWPA"), JoinVerdict::Allow, "one-to-one topics have no group rules");
    }
}
