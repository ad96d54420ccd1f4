//! `topics`: one user creates N groups and publishes once to each; print loaded topics and server RSS growth.
//!
//! This is the evidence for the bounded topic registry (`limits.max_loaded_topics`): run it once with a bound
//! below N and once above, and compare `palaver_loaded_topics` and the RSS growth per topic.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{self, REPLY_TIMEOUT};
use crate::frames::{self, Stamp};
use crate::stats::{Anomalies, JsonLine, round3, unix_micros};
use crate::target::{RATE_LIMIT_HINT, Target, TargetArgs, own_cpu_secs};

/// Options of the loaded-topics test.
#[derive(Args, Debug)]
pub(crate) struct TopicsArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Groups to create, each then published to once.
    #[arg(long, default_value_t = 100_000)]
    topics: usize,
    /// Requests in flight on the one WebSocket, so that the run is not bound by round trips.
    #[arg(long, default_value_t = 64)]
    window: usize,
}

/// What the request loop counted.
#[derive(Default)]
struct Counts {
    created: usize,
    published: usize,
    anomalies: Anomalies,
}

/// Creates the groups, publishes to each and prints the figures.
pub(crate) async fn run(args: TopicsArgs) -> Result<()> {
    let target = Target::open(&args.target).await?;
    println!(
        "topics: one user creates {} groups and publishes one message to each, {} requests in flight",
        args.topics, args.window
    );
    let mut conn = client::new_user(&target, 64 * 1024, &format!("b{}t", crate::run_tag()), "bench topics").await?;
    // Let the freshly started server settle so the baseline does not include lazy start-up allocations.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = target.rss_kib();
    let anon_before = target.pid.and_then(anon_kib);
    let loaded_before = loaded_topics(target.addr).await?;
    let server_cpu = target.cpu_secs();
    let client_cpu = own_cpu_secs();

    let start = Instant::now();
    let counts = create_and_publish(&mut conn, args.topics, args.window.max(1)).await;
    let elapsed = start.elapsed().as_secs_f64();
    let server_cpu = target.cpu_secs().zip(server_cpu).map(|(after, before)| after - before);
    let client_cpu = own_cpu_secs() - client_cpu;
    let counts = match counts {
        Ok(counts) => counts,
        Err(err) => {
            println!("PROBLEM: the run stopped early: {err:#}; server log tail:\n{}", target.log_tail(10));
            target.finish();
            return Err(err);
        }
    };
    let rss_after = target.rss_kib();
    let anon_after = target.pid.and_then(anon_kib);
    let loaded_after = loaded_topics(target.addr).await?;

    let rate = counts.created as f64 / elapsed.max(1e-9);
    println!(
        "created {}/{} groups and published to {} in {elapsed:.1} s: {rate:.0} groups/s (sub new + pub)",
        counts.created, args.topics, counts.published
    );
    let show = |v: Option<f64>| v.map_or(String::from("absent"), |v| format!("{v:.0}"));
    println!("  palaver_loaded_topics {} before, {} after", show(loaded_before), show(loaded_after));
    counts.anomalies.print("requests refused");

    let mut out = JsonLine::new("topics");
    out.set("topics", args.topics);
    out.set("window", args.window);
    out.set("created", counts.created);
    out.set("published", counts.published);
    out.set("failed", counts.anomalies.count);
    out.set("elapsed_s", round3(elapsed));
    out.set("groups_per_s", rate.round());
    if let Some(v) = loaded_before {
        out.set("loaded_topics_before", v);
    }
    if let Some(v) = loaded_after {
        out.set("loaded_topics", v);
    }
    match (rss_before, rss_after) {
        (Some(before), Some(after)) => {
            let per_topic = after.saturating_sub(before) as f64 / counts.created.max(1) as f64;
            println!(
                "  server RSS {before} KiB before, {after} KiB after: {:.3} KiB ({:.0} B) growth per group created \
                 (the store's rows, the user's subscriptions and the loaded topics together)",
                per_topic,
                per_topic * 1024.0
            );
            out.set("server_rss_before_kib", before);
            out.set("server_rss_after_kib", after);
            out.set("rss_growth_kib", after.saturating_sub(before));
            out.set("rss_growth_bytes_per_topic", (per_topic * 1024.0).round());
        }
        _ => println!("  server RSS unknown: pass --spawn, or --pid of the running server"),
    }
    // VmRSS also counts the binary's and libraries' file pages, which fault in at different times from run to
    // run; the anonymous part is the heap, which is where loaded topics live.
    if let (Some(before), Some(after)) = (anon_before, anon_after) {
        let per_topic = after.saturating_sub(before) as f64 * 1024.0 / counts.created.max(1) as f64;
        println!("  server RssAnon {before} KiB before, {after} KiB after: {per_topic:.0} B growth per group created");
        out.set("server_anon_before_kib", before);
        out.set("server_anon_after_kib", after);
        out.set("anon_growth_bytes_per_topic", per_topic.round());
    }
    let server = server_cpu.map_or(String::from("unknown (no pid)"), |s| format!("{s:.2} s"));
    println!("  CPU: server {server}, client {client_cpu:.2} s");
    if let Some(s) = server_cpu {
        out.set("server_cpu_s", round3(s));
    }
    out.set("client_cpu_s", round3(client_cpu));
    target.report_log_problems();
    target.finish();
    println!("{out}");
    drop(conn);
    Ok(())
}

/// Keeps up to `window` requests in flight: `{sub topic:"new…"}` for each group, and once its ctrl names the
/// new `grp…`, one `{pub}` to it; returns when every request was answered.
async fn create_and_publish(conn: &mut client::Conn, n: usize, window: usize) -> Result<Counts> {
    let mut counts = Counts::default();
    let (mut sent, mut in_flight) = (0usize, 0usize);
    let step = (n / 10).max(1);
    let start = Instant::now();
    while sent < n || in_flight > 0 {
        while sent < n && in_flight < window {
            let body = json!({"sub": {"id": format!("s{sent}"), "topic": format!("new{sent}"),
                "set": {"desc": {"public": {"fn": "bench topic"}}}}});
            conn.send_text(body.to_string()).await?;
            sent += 1;
            in_flight += 1;
        }
        let text = conn.next_text(Instant::now() + REPLY_TIMEOUT).await.context("waiting for a reply")?;
        // Only ctrl frames are awaited; the {pub}s carry noecho, so no {data} comes back to this session.
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            counts.anomalies.note(format!("unparsable frame: {text}"));
            continue;
        };
        let Some(ctrl) = value.get("ctrl") else { continue };
        let Some(id) = ctrl.get("id").and_then(Value::as_str) else { continue };
        let code = ctrl.get("code").and_then(Value::as_u64).unwrap_or(0);
        if code == 429 {
            bail!("{text}: {RATE_LIMIT_HINT}");
        }
        if !(200..300).contains(&code) {
            counts.anomalies.note(text.to_string());
            in_flight -= 1;
            continue;
        }
        if let Some(i) = id.strip_prefix('s') {
            let Some(topic) = ctrl.get("topic").and_then(Value::as_str).filter(|t| t.starts_with("grp")) else {
                bail!("the ctrl for {{sub topic:\"new\"}} named no grp topic: {text}");
            };
            counts.created += 1;
            let i: u64 = i.parse().unwrap_or(0);
            // The sub's slot in the window passes to its pub.
            conn.send_text(frames::pub_text(&format!("p{i}"), topic, Stamp { t: unix_micros(), i, r: 1 })).await?;
        } else {
            counts.published += 1;
            in_flight -= 1;
            if counts.published % step == 0 && counts.published < n {
                println!("  published: {}/{n} after {:.1} s", counts.published, start.elapsed().as_secs_f64());
            }
        }
    }
    Ok(counts)
}

/// RssAnon of a process in KiB (the anonymous, mostly heap, part of VmRSS), from /proc/<pid>/status.
fn anon_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `palaver_loaded_topics` from `GET /metrics` (summed over its label sets), or `None` when the server has none.
async fn loaded_topics(addr: SocketAddr) -> Result<Option<f64>> {
    let text = get_metrics(addr).await?;
    let samples: HashMap<&str, f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k, v.parse().ok()?))))
        .collect();
    let mut found = samples
        .iter()
        .filter(|(k, _)| **k == "palaver_loaded_topics" || k.starts_with("palaver_loaded_topics{"))
        .peekable();
    if found.peek().is_none() {
        return Ok(None);
    }
    Ok(Some(found.map(|(_, v)| v).sum()))
}

/// One `GET /metrics` over a fresh connection that the server closes after the response.
async fn get_metrics(addr: SocketAddr) -> Result<String> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.with_context(|| format!("connecting to {addr}"))?;
        let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else { bail!("GET /metrics: no end of headers") };
        if !head.starts_with("HTTP/1.1 200") {
            bail!("GET /metrics answered {}", head.lines().next().unwrap_or(""));
        }
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            bail!("GET /metrics answered with a chunked body, which this tool does not decode");
        }
        Ok(body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(10), attempt).await.context("GET /metrics timed out")?
}
