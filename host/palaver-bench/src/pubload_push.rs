//! `publish --compare-push`: the same load against a spawned server with push off and then on, side by side,
//! and the push worker's throughput. A third run in between has push on and no worker on the node (`push.worker`
//! off, as a chat node whose pushes other nodes send): what making and queueing the tasks costs the publish
//! path. Every group gets one extra member with R and P and a registered device token who is offline during the
//! load (in every run, so the runs differ only in push), so each accepted
//! message makes one push task and one webhook push. The webhook points at a local sink that answers 200 and
//! counts; pushes/s is the sink's count over the span from its first to its last push.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::pubload::{self, Figures, PublishArgs};
use crate::pubload_compare::{ratio, side_by_side};
use crate::stats::round3;

/// The largest share of accepted msg/s that making push tasks may cost the publish path.
const MAX_PUSH_COST: f64 = 0.05;
/// The sink stops waiting for more pushes once none has come for this long.
const IDLE: Duration = Duration::from_secs(5);
/// The server's counters of push tasks made and dropped (a full buffer).
const TRIGGERED: &str = "palaver_push_triggered_total";
const DROPPED: &str = "palaver_push_dropped_total";

/// What the push-on run adds to the publish figures.
#[derive(Debug, Clone, Default)]
pub(crate) struct PushFigures {
    /// Push tasks the publish path made and dropped during the load.
    pub(crate) triggered: f64,
    pub(crate) dropped: f64,
    /// Pushes the sink received, and over how long (first to last).
    pub(crate) received: u64,
    pub(crate) span_s: f64,
    /// How long after the last accepted message the last push came.
    pub(crate) drain_s: f64,
}

impl PushFigures {
    fn per_s(&self) -> f64 {
        if self.span_s > 0.0 { self.received as f64 / self.span_s } else { 0.0 }
    }
}

/// The local webhook receiver: answers every request 200 and counts it, noting its first and last arrival.
#[derive(Clone)]
pub(crate) struct Sink {
    pub(crate) url: String,
    count: Arc<AtomicU64>,
    span: Arc<Span>,
}

/// The first and last instants a push arrived.
#[derive(Default)]
struct Span(Mutex<Option<(Instant, Instant)>>);

impl Span {
    fn note(&self, at: Instant) {
        let mut span = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *span = Some(span.map_or((at, at), |(first, _)| (first, at)));
    }

    fn get(&self) -> Option<(Instant, Instant)> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Sink {
    pub(crate) async fn start() -> Result<Sink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("binding the push sink")?;
        let url = format!("http://{}/push", listener.local_addr()?);
        let sink = Sink { url, count: Arc::default(), span: Arc::default() };
        let serving = sink.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().serve(stream));
            }
        });
        Ok(sink)
    }

    /// Answers the requests of one keep-alive connection until it closes.
    async fn serve(self, mut s: tokio::net::TcpStream) {
        let mut buf = Vec::with_capacity(8192);
        let mut chunk = [0u8; 8192];
        loop {
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4) else {
                match s.read(&mut chunk).await {
                    Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() < end + len {
                match s.read(&mut chunk).await {
                    Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
                continue;
            }
            buf.drain(..end + len);
            self.count.fetch_add(1, Ordering::Relaxed);
            self.span.note(Instant::now());
            if s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}").await.is_err() {
                return;
            }
        }
    }

    fn received(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// After the load: waits until `expected` pushes came, none came for [`IDLE`], or `max` passed.
    pub(crate) async fn drain(&self, addr: std::net::SocketAddr, expected: u64, max: Duration) -> PushFigures {
        let load_end = Instant::now();
        let (mut last, mut seen) = (Instant::now(), self.received());
        while self.received() < expected && last.elapsed() < IDLE && load_end.elapsed() < max {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if self.received() != seen {
                (last, seen) = (Instant::now(), self.received());
            }
        }
        let metric = |name| async move { crate::scaleout::metric(addr, name).await.unwrap_or(f64::NAN) };
        let (first, end) = self.span.get().unwrap_or((load_end, load_end));
        let figures = PushFigures {
            triggered: metric(TRIGGERED).await,
            dropped: metric(DROPPED).await,
            received: self.received(),
            span_s: end.saturating_duration_since(first).as_secs_f64(),
            drain_s: end.saturating_duration_since(load_end).as_secs_f64(),
        };
        println!(
            "  push: {} tasks made, {} dropped; the sink got {} pushes in {:.2} s ({:.0} pushes/s through the \
             worker), the last {:.2} s after the load",
            figures.triggered,
            figures.dropped,
            figures.received,
            figures.span_s,
            figures.per_s(),
            figures.drain_s
        );
        if figures.received < expected {
            println!("PROBLEM: the sink got {} of {expected} pushes", figures.received);
        }
        figures
    }
}

/// One pass's figures: push off, push on with the worker elsewhere, push on with it here, and the push figures.
struct Round {
    off: Figures,
    alone: Figures,
    on: Figures,
    push: PushFigures,
}

/// Runs the load with push off, with push on and the worker elsewhere, and with push on through the sink,
/// `--rounds` times, and prints them and the costs (the median costs when there are several rounds).
pub(crate) async fn run(args: &PublishArgs) -> Result<()> {
    ensure!(
        args.target.spawn.is_some(),
        "--compare-push starts the server three times itself, so it needs --spawn PATH"
    );
    let rounds = args.compare.rounds.max(1);
    let mut all = Vec::with_capacity(rounds);
    for n in 1..=rounds {
        if rounds > 1 {
            println!("== round {n} of {rounds}");
        }
        all.push(round(args).await?);
        println!();
    }
    print_table(args, &all);
    Ok(())
}

/// The three loads, each against a server of its own; a fresh sink counts this round's pushes.
async fn round(args: &PublishArgs) -> Result<Round> {
    let off = pubload::measure(&args.target, args, "push off").await.context("the run with push off")?;
    println!();
    let sink = Sink::start().await?;
    let mut target = args.target.clone();
    target.server_env.extend([
        ("PALAVER_PUSH__ENABLED".to_owned(), "true".to_owned()),
        ("PALAVER_PUSH__WEBHOOK__URL".to_owned(), sink.url.clone()),
        ("PALAVER_PUSH__WEBHOOK__SECRET".to_owned(), "bench-webhook-secret".to_owned()),
    ]);
    // The publish path's own share: tasks made and queued, the worker on no node (`push.worker` off), as on a
    // chat node of a cluster whose pushes go out through other nodes.
    let mut elsewhere = target.clone();
    elsewhere.server_env.push(("PALAVER_PUSH__WORKER".to_owned(), "false".to_owned()));
    elsewhere.expected_warnings.push("push.worker is off on the embedded queue");
    let alone =
        pubload::measure(&elsewhere, args, "push on, worker elsewhere").await.context("the run without worker")?;
    println!();
    let (on, push) = pubload::measure_push(&target, args, "push on", &sink).await.context("the run with push on")?;
    Ok(Round { off, alone, on, push })
}

/// The middle value of `v` (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The share of accepted msg/s that `with` lost against `off`.
fn cost_of(off: &Figures, with: &Figures) -> f64 {
    1.0 - ratio(with.msg_per_s, off.msg_per_s)
}

fn print_table(args: &PublishArgs, all: &[Round]) {
    let Some(last) = all.last() else { return };
    let (off, alone, on, push) = (&last.off, &last.alone, &last.on, &last.push);
    side_by_side(args, ["publish compare-push", "ratio on/off"], ("push off", off), ("push on", on));
    let costs: Vec<f64> = all.iter().map(|r| cost_of(&r.off, &r.on)).collect();
    let alone_costs: Vec<f64> = all.iter().map(|r| cost_of(&r.off, &r.alone)).collect();
    let (cost, alone_cost) = (median(costs.clone()), median(alone_costs.clone()));
    // A negative cost is the noise between the runs on a shared machine.
    let shown = |c: f64| if c < 0.0 { String::from("nothing measurable") } else { format!("{:.1} %", c * 100.0) };
    let verdict = |c: f64| if c <= MAX_PUSH_COST { "meets" } else { "MISSES" };
    println!(
        "  push on with the worker elsewhere (tasks made and queued, none sent here): {:.0} accepted msg/s, \
         {:.1} µs server CPU per message",
        alone.msg_per_s,
        alone.server_cpu_s.map_or(f64::NAN, |s| s * 1e6 / alone.acked.max(1) as f64)
    );
    if all.len() > 1 {
        let list = |v: &[f64]| v.iter().map(|c| format!("{:.1} %", c * 100.0)).collect::<Vec<_>>().join(", ");
        println!("  costs by round, worker elsewhere: {}; worker here: {}", list(&alone_costs), list(&costs));
    }
    let of = if all.len() > 1 { format!("the median of {} rounds", all.len()) } else { String::from("one run each") };
    println!(
        "verdict: push costs {} of accepted msg/s with the worker on this node (target ≤ {:.0} %: {}), \
         {} with it elsewhere ({}); the worker pushed {:.0}/s; {of}, on a shared 2-core machine",
        shown(cost),
        MAX_PUSH_COST * 100.0,
        verdict(cost),
        shown(alone_cost),
        verdict(alone_cost),
        push.per_s()
    );
    let mut out = pubload::head(args, "compare-push");
    pubload::put_figures(&mut out, "off_", off);
    pubload::put_figures(&mut out, "on_", on);
    out.set("ratio_msg_per_s", round3(ratio(on.msg_per_s, off.msg_per_s)));
    out.set("rounds", all.len());
    out.set("push_cost", round3(cost));
    out.set("elsewhere_msg_per_s", alone.msg_per_s.round());
    out.set("push_cost_worker_elsewhere", round3(alone_cost));
    out.set("push_costs", costs.iter().map(|c| round3(*c)).collect::<Vec<_>>());
    out.set("push_costs_worker_elsewhere", alone_costs.iter().map(|c| round3(*c)).collect::<Vec<_>>());
    out.set("push_cost_target", MAX_PUSH_COST);
    out.set("push_tasks", push.triggered);
    out.set("push_dropped", push.dropped);
    out.set("pushes_received", push.received);
    out.set("pushes_per_s", push.per_s().round());
    out.set("push_drain_s", round3(push.drain_s));
    println!("{out}");
}
