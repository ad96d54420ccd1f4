//! `business`: friend requests over the `/v1/im/` HTTP API, timed from request to response, with the server's
//! own split of that time into the rules (the plugin call) and the rest (storage, events, notifications).
//!
//! Every user keeps a WebSocket open on `me`, so each request's events and notification are really delivered.
//! Workers send `friend.request.create` from user `i` to user `i + k` (a new pair each time, so every call
//! writes) over keep-alive HTTP connections; the figures are client-side latency and throughput, and the
//! deltas of `palaver_business_*` in `GET /metrics`.
//!
//! Before the server starts, the same rule call is timed in this process on the plugins of `--plugins`
//! (`rule_cost.rs`): the isolated figure the server's median per rule call is compared with.

use std::net::SocketAddr;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::client::{self, Conn};
use crate::rule_cost;
use crate::stats::{JsonLine, Samples, round3};
use crate::target::{Target, TargetArgs};

/// Options of the business command test.
#[derive(Args, Debug)]
pub(crate) struct BusinessArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Users signed up; each sends `requests / users` friend requests to distinct others.
    #[arg(long, default_value_t = 200)]
    users: usize,
    /// Friend requests in all.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// HTTP connections sending requests at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Sign-ups in flight during setup (each costs the server a password hash).
    #[arg(long, default_value_t = 8)]
    setup_concurrency: usize,
    /// The plugin directory the server loads, for the isolated figure (skipped if it does not exist).
    #[arg(long, default_value = "target/plugins/deploy")]
    plugins: std::path::PathBuf,
}

/// One signed-up user: the open `me` session (kept so events are delivered) and the login token.
struct User {
    _conn: Conn,
    id: String,
    token: String,
}

pub(crate) async fn run(args: BusinessArgs) -> Result<()> {
    if args.users < 2 || args.requests > args.users * (args.users - 1) {
        bail!("--requests must fit the distinct pairs of --users");
    }
    crate::raise_nofile(args.users as u64 + 256);
    let isolated = if args.plugins.is_dir() { Some(rule_cost::isolated(&args.plugins).await?) } else { None };
    if let Some(i) = &isolated {
        println!(
            "isolated rule call (friend.request.create through the plugin runtime, {} calls back to back): p50 {:.2} µs, p99 {:.2} µs",
            i.calls, i.p50_us, i.p99_us
        );
        println!(
            "isolated rule call, the caches emptied before each of {} calls: p50 {:.2} µs",
            i.cold_calls, i.cold_p50_us
        );
    }
    let target = Target::open(&args.target).await?;
    println!(
        "business: {} users, {} friend requests over {} HTTP connections; client and server share this machine",
        args.users, args.requests, args.concurrency
    );
    let tag = crate::run_tag();
    let made = client::bounded("users ready", args.users, args.setup_concurrency, |i| {
        let (target, tag) = (&target, &tag);
        async move { sign_up(target, &format!("bz{tag}u{i}")).await }
    })
    .await;
    let mut users = Vec::with_capacity(args.users);
    for (i, r) in made {
        users.push(r.with_context(|| format!("user {i}"))?);
    }
    let before = metrics(target.addr).await?;
    let start = Instant::now();
    let per_worker = args.requests.div_ceil(args.concurrency);
    let users = &users;
    let workers = (0..args.concurrency).map(|w| {
        let addr = target.addr;
        let apikey = target.apikey.clone();
        async move {
            let mut http = Http::connect(addr).await?;
            let (mut samples, mut failures) = (Samples::default(), Vec::new());
            for n in (w * per_worker)..((w + 1) * per_worker).min(args.requests) {
                // Request n goes from user n % U to the user k places on, k growing every U requests.
                let (from, k) = (n % users.len(), 1 + n / users.len());
                let to = (from + k) % users.len();
                let body = json!({ "to": users[to].id, "message": "bench" }).to_string();
                let sent = Instant::now();
                let (status, text) = http.post(&apikey, &users[from].token, "/v1/im/friends/requests", &body).await?;
                samples.push(sent.elapsed().as_micros() as i64);
                if status != 200 {
                    failures.push(format!("{status} {text}"));
                }
            }
            anyhow::Ok((samples, failures))
        }
    });
    let results = futures_util::future::join_all(workers).await;
    let secs = start.elapsed().as_secs_f64();
    let after = metrics(target.addr).await?;
    let (mut all, mut failures) = (Samples::default(), Vec::new());
    for r in results {
        let (mut s, f) = r?;
        all.append(&mut s);
        failures.extend(f);
    }
    let latency = all.summary();
    let delta = |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    let commands = delta("palaver_business_commands_total{outcome=\"ok\"}")
        + delta("palaver_business_commands_total{outcome=\"refused\"}")
        + delta("palaver_business_commands_total{outcome=\"failed\"}");
    let command_us = delta("palaver_business_command_microseconds_total") / commands.max(1.0);
    let rule_us =
        1e6 * delta("palaver_business_rule_seconds_sum") / delta("palaver_business_rule_seconds_count").max(1.0);
    let rule_p50 = rule_cost::server_median(&before, &after);
    let rate = latency.count as f64 / secs;
    println!(
        "friend requests: {:.0}/s on this node ({} in {secs:.2} s), {} failed",
        rate,
        latency.count,
        failures.len()
    );
    println!("HTTP request → response: {}", latency.line());
    println!(
        "server side, mean per command: {command_us:.0} µs in all, of which the plugin call {rule_us:.1} µs ({:.1} %)",
        100.0 * rule_us / command_us.max(1.0)
    );
    if let Some((p50, n)) = rule_p50 {
        print!("server side, median rule call: {p50:.1} µs of {n:.0} calls");
        match &isolated {
            Some(i) => println!(
                "; isolated {:.1} µs, so the server adds {:.1} µs per call at the median ({:.1} µs against the \
                 isolated call with cold caches)",
                i.p50_us,
                p50 - i.p50_us,
                p50 - i.cold_p50_us
            ),
            None => println!(),
        }
    }
    for f in failures.iter().take(3) {
        println!("  failure: {f}");
    }
    let mut line = JsonLine::new("business");
    line.set("users", args.users).set("requests", latency.count).set("concurrency", args.concurrency);
    line.set("requests_per_sec", round3(rate)).set("failed", failures.len());
    line.set("server_command_us", round3(command_us)).set("server_rule_us", round3(rule_us));
    if let Some((p50, _)) = rule_p50 {
        line.set("server_rule_p50_us", round3(p50));
    }
    if let Some(i) = &isolated {
        line.set("isolated_rule_p50_us", round3(i.p50_us)).set("isolated_rule_p99_us", round3(i.p99_us));
        line.set("isolated_cold_rule_p50_us", round3(i.cold_p50_us));
    }
    latency.put(&mut line, "latency_");
    println!("{line}");
    target.finish();
    Ok(())
}

/// Signs a user up over the socket, subscribes to `me` and keeps the session open.
async fn sign_up(target: &Target, login: &str) -> Result<User> {
    let mut conn = Conn::new(client::connect(target, 4096).await?);
    conn.hi().await?;
    let secret = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{login}:bench-pass"));
    let reply =
        conn.request_ok("acc", json!({ "user": "new", "scheme": "basic", "secret": secret, "login": true })).await?;
    let id = reply.params["user"].as_str().context("no user in the sign-up reply")?.to_owned();
    let token = reply.params["token"].as_str().context("no token in the sign-up reply")?.to_owned();
    conn.sub("me", None).await?;
    Ok(User { _conn: conn, id, token })
}

/// The server's Prometheus counters, by full sample name.
async fn metrics(addr: SocketAddr) -> Result<std::collections::HashMap<String, f64>> {
    let mut http = Http::connect(addr).await?;
    let (status, text) = http.send("GET", "/metrics", &[], "").await?;
    if status != 200 {
        bail!("GET /metrics answered {status}");
    }
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_owned(), v.parse().ok()?))))
        .collect())
}

/// A keep-alive HTTP/1.1 connection that reads `Content-Length` bodies (what hyper sends for full bodies).
struct Http {
    io: BufReader<TcpStream>,
    addr: SocketAddr,
}

impl Http {
    async fn connect(addr: SocketAddr) -> Result<Http> {
        let s = TcpStream::connect(addr).await.with_context(|| format!("connecting to {addr}"))?;
        s.set_nodelay(true)?;
        Ok(Http { io: BufReader::new(s), addr })
    }

    async fn post(&mut self, apikey: &str, token: &str, path: &str, body: &str) -> Result<(u16, String)> {
        let auth = format!("Token {token}");
        let headers =
            [("X-Tinode-APIKey", apikey), ("Authorization", auth.as_str()), ("Content-Type", "application/json")];
        self.send("POST", path, &headers, body).await
    }

    async fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Result<(u16, String)> {
        let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.io.get_mut().write_all(req.as_bytes()).await?;
        let mut line = String::new();
        self.io.read_line(&mut line).await?;
        let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).context("no HTTP status")?;
        let mut length = 0usize;
        loop {
            line.clear();
            if self.io.read_line(&mut line).await? == 0 {
                bail!("the connection closed mid-response");
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().context("bad Content-Length")?;
            }
        }
        let mut buf = vec![0; length];
        self.io.read_exact(&mut buf).await?;
        Ok((status, String::from_utf8_lossy(&buf).into_owned()))
    }
}
