//! `publish`: T groups × P publishers, each sending N messages as fast as its window allows; accepted
//! messages/s, publish→ctrl 202 latency and rejections by code, i.e. the write path without fanout.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::publish::{self, Outcome, Plan};
use crate::pubload_compare::{self, CompareArgs};
use crate::pubload_push::{PushFigures, Sink};
use crate::pubload_setup::{self, Shape};
use crate::stats::{JsonLine, SeqCheck, Summary, check_seqs, per_second_line, round3};
use crate::target::{RATE_LIMIT_HINT, Target, TargetArgs, cpu_secs, machine_busy_secs, own_cpu_secs, pid_of};

/// The variable that lifts the server's per-session rate limit (50 messages/s by default).
pub(crate) const RATE_ENV: &str = "PALAVER_LIMITS__RATE_PER_SECOND";
/// Co-located services whose CPU time is reported beside the server's, when they run on this machine (`java`:
/// the Kafka broker that `scripts/lib/services.sh` starts).
const COLOCATED: [&str; 3] = ["mariadbd", "redis-server", "java"];
/// The relay's counter of outbox entries produced to the task queue.
const OUTBOX_PRODUCED: &str = "palaver_outbox_produced_total";
/// The node's Redis round trips (one per command, script call or pipeline).
const REDIS_ROUND_TRIPS: &str = "palaver_redis_commands_total";
/// MariaDB append transactions (batches) of the node's batch writers; each is BEGIN, one topic update, one
/// insert per chunk of rows (one up to 16 rows) and COMMIT.
const DB_APPEND_BATCHES: &str = "palaver_mysql_append_batch_rows_count";

/// Options of the write-path test.
#[derive(Args, Debug, Clone)]
pub(crate) struct PublishArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Groups, each with its own publishers.
    #[arg(long, default_value_t = 1)]
    pub(crate) topics: usize,
    /// Publishers per group: one owner that creates it, the others join.
    #[arg(long, default_value_t = 1)]
    pub(crate) publishers_per_topic: usize,
    /// Messages every publisher sends.
    #[arg(long, default_value_t = 5000)]
    pub(crate) messages: u64,
    /// Publishes each publisher may have awaiting their ctrl 202 at once.
    #[arg(long, default_value_t = 16)]
    pub(crate) window: usize,
    /// Give every publish a unique `client_mid`, so the server claims and completes an idempotency key too.
    #[arg(long)]
    pub(crate) client_mid: bool,
    /// Sign-ups in flight during setup (each costs the server an argon2 hash).
    #[arg(long, default_value_t = 4)]
    pub(crate) setup_concurrency: usize,
    /// Before the measured part, wait until other processes use less than this many cores (0: do not wait);
    /// the machine is shared, and a neighbour's build would otherwise be measured too.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) quiet_cores: f64,
    /// The longest wait for --quiet-cores, in seconds; after it the run starts anyway, with a warning.
    #[arg(long, default_value_t = 300)]
    pub(crate) quiet_wait_secs: u64,
    /// Let publishers keep R, so each message is also delivered to the group's other publishers (fanout P − 1).
    #[arg(long)]
    pub(crate) peers_read: bool,
    /// With --compare-push: the longest wait after the load for the worker to push the rest, in seconds.
    #[arg(long, default_value_t = 120)]
    pub(crate) push_drain_secs: u64,
    #[command(flatten)]
    pub(crate) compare: CompareArgs,
}

/// The figures of one run, for the side-by-side comparison.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    pub(crate) sent: u64,
    pub(crate) acked: u64,
    pub(crate) rejected: u64,
    pub(crate) by_code: BTreeMap<u16, u64>,
    pub(crate) msg_per_s: f64,
    pub(crate) wall_s: f64,
    pub(crate) ack: Summary,
    pub(crate) server_cpu_s: Option<f64>,
    pub(crate) client_cpu_s: f64,
    /// CPU seconds of the co-located services over the run, by command name.
    pub(crate) colocated_cpu_s: Vec<(&'static str, f64)>,
    /// CPU seconds every other process of the machine used over the run (other users' builds, say).
    pub(crate) others_cpu_s: Option<f64>,
    pub(crate) setup_s: f64,
    pub(crate) aborted: usize,
    /// Duplicate and missing seqs over all topics, from the acknowledgements.
    pub(crate) seqs: SeqCheck,
    /// Outbox entries the server's relay produced to its task queue during the load (from `/metrics`).
    pub(crate) outbox_produced: Option<f64>,
    /// Redis round trips and MariaDB append transactions during the load (from `/metrics`; 0 on a node
    /// without them).
    pub(crate) round_trips: Option<RoundTrips>,
}

/// What the load cost in round trips to the shared services.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoundTrips {
    pub(crate) redis: f64,
    pub(crate) db_batches: f64,
}

impl RoundTrips {
    async fn read(addr: std::net::SocketAddr) -> Option<RoundTrips> {
        let redis = crate::scaleout::metric(addr, REDIS_ROUND_TRIPS).await.ok()?;
        let db_batches = crate::scaleout::metric(addr, DB_APPEND_BATCHES).await.ok()?;
        Some(RoundTrips { redis, db_batches })
    }

    fn since(self, before: RoundTrips) -> RoundTrips {
        RoundTrips { redis: self.redis - before.redis, db_batches: self.db_batches - before.db_batches }
    }
}

/// Runs the load once against `--spawn`/`--addr`, or twice with `--compare` or `--compare-kafka`.
pub(crate) async fn run(args: PublishArgs) -> Result<()> {
    if args.topics == 0 || args.publishers_per_topic == 0 || args.messages == 0 {
        bail!("--topics, --publishers-per-topic and --messages must all be at least 1");
    }
    if args.compare.compare {
        return pubload_compare::run(&args).await;
    }
    if args.compare.compare_kafka {
        return pubload_compare::run_kafka(&args).await;
    }
    if args.compare.compare_push {
        return crate::pubload_push::run(&args).await;
    }
    let figures = measure(&args.target, &args, "").await?;
    println!("{}", json_line(&args, "", &figures));
    Ok(())
}

/// Starts or finds the server, sets the groups up, runs the load and prints the human-readable figures.
pub(crate) async fn measure(target_args: &TargetArgs, args: &PublishArgs, label: &str) -> Result<Figures> {
    Ok(measure_with(target_args, args, label, None).await?.0)
}

/// [`measure`] with push on through `sink`: after the load, also waits for the pushes and counts them.
pub(crate) async fn measure_push(
    target_args: &TargetArgs,
    args: &PublishArgs,
    label: &str,
    sink: &Sink,
) -> Result<(Figures, PushFigures)> {
    let (figures, push) = measure_with(target_args, args, label, Some(sink)).await?;
    Ok((figures, push.unwrap_or_default()))
}

async fn measure_with(
    target_args: &TargetArgs,
    args: &PublishArgs,
    label: &str,
    sink: Option<&Sink>,
) -> Result<(Figures, Option<PushFigures>)> {
    let publishers = args.topics * args.publishers_per_topic;
    crate::raise_nofile(publishers as u64 + 256);
    let mut target_args = target_args.clone();
    if target_args.spawn.is_some() && !target_args.server_env.iter().any(|(k, _)| k == RATE_ENV) {
        target_args.server_env.push((RATE_ENV.into(), "0".into()));
    }
    // Waiting happens before the server starts: idle sessions would be closed by its 55 s idle timeout.
    if args.quiet_cores > 0.0 {
        wait_for_quiet(args.quiet_cores, args.quiet_wait_secs).await;
    }
    let target = Target::open(&target_args).await?;
    let name = if label.is_empty() { String::new() } else { format!(" [{label}]") };
    println!(
        "publish{name}: {} topics × {} publishers × {} messages, window {}, client_mid {}, {}; client and server \
         share this 2-core machine",
        args.topics,
        args.publishers_per_topic,
        args.messages,
        args.window,
        if args.client_mid { "on" } else { "off" },
        if args.peers_read { "peers read (fanout P − 1)" } else { "write only (no R, nothing delivered)" },
    );
    let setup_start = Instant::now();
    let shape = Shape {
        topics: args.topics,
        publishers_per_topic: args.publishers_per_topic,
        concurrency: args.setup_concurrency,
        peers_read: args.peers_read,
        offline_readers: args.compare.compare_push,
    };
    let ready = pubload_setup::setup(&target, &shape).await?;
    let setup_s = setup_start.elapsed().as_secs_f64();
    println!("setup: {} publishers ready in {setup_s:.1} s", ready.len());
    if ready.len() < publishers {
        println!("PROBLEM: only {} of {publishers} publishers could be set up", ready.len());
    }

    let server_cpu = target.cpu_secs();
    let client_cpu = own_cpu_secs();
    let machine = machine_busy_secs();
    let colocated: Vec<(&'static str, u32, f64)> =
        COLOCATED.iter().filter_map(|name| pid_of(name).and_then(|pid| Some((*name, pid, cpu_secs(pid)?)))).collect();
    let outbox_before = crate::scaleout::metric(target.addr, OUTBOX_PRODUCED).await.ok();
    let trips_before = RoundTrips::read(target.addr).await;
    let origin = Instant::now();
    let tag = crate::run_tag();
    let tasks: Vec<_> = ready
        .into_iter()
        .enumerate()
        .map(|(i, mut one)| {
            let (messages, window) = (args.messages, args.window);
            let mid = args.client_mid.then(|| format!("{tag}-{i}-"));
            tokio::spawn(async move {
                let plan =
                    Plan { topic: &one.topic, run: 1, messages, rate: 0.0, window, client_mid: mid.as_deref(), origin };
                let outcome = publish::publish(&mut one.conn, &plan).await;
                (one, outcome)
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    let mut sessions = Vec::with_capacity(tasks.len());
    let mut seqs: HashMap<String, Vec<i64>> = HashMap::new();
    for task in tasks {
        let (one, mut outcome) = task.await.context("a publisher task panicked")?;
        seqs.entry(one.topic.clone()).or_default().append(&mut outcome.seqs);
        sessions.push(one);
        outcomes.push(outcome);
    }
    let server_cpu_s = target.cpu_secs().zip(server_cpu).map(|(after, before)| after - before);
    let client_cpu_s = own_cpu_secs() - client_cpu;
    let colocated_cpu_s: Vec<(&'static str, f64)> =
        colocated.into_iter().filter_map(|(name, pid, before)| Some((name, cpu_secs(pid)? - before))).collect();
    let ours = server_cpu_s.unwrap_or(0.0) + client_cpu_s + colocated_cpu_s.iter().map(|c| c.1).sum::<f64>();
    let others = machine_busy_secs().zip(machine).map(|(after, before)| (after - before - ours).max(0.0));
    let cpu = Cpu { server: server_cpu_s, client: client_cpu_s, colocated: colocated_cpu_s, others };
    let mut figures = report(args, outcomes, cpu, setup_s);
    figures.seqs = report_seqs(seqs);
    // Read after the load, before the server goes: what the publish path put through the outbox meanwhile.
    let outbox_after = crate::scaleout::metric(target.addr, OUTBOX_PRODUCED).await.ok();
    figures.outbox_produced = outbox_after.zip(outbox_before).map(|(after, before)| after - before);
    figures.round_trips = RoundTrips::read(target.addr).await.zip(trips_before).map(|(after, b)| after.since(b));
    if let Some(t) = figures.round_trips {
        let n = figures.acked.max(1) as f64;
        println!(
            "  per accepted message: {:.2} Redis round trips, {:.3} MariaDB append batches ({:.1} rows each)",
            t.redis / n,
            t.db_batches / n,
            if t.db_batches > 0.0 { n / t.db_batches } else { 0.0 }
        );
    }
    let push = match sink {
        Some(sink) => Some(sink.drain(target.addr, figures.acked, Duration::from_secs(args.push_drain_secs)).await),
        None => None,
    };
    drop(sessions);
    target.report_log_problems();
    target.finish();
    Ok((figures, push))
}

/// Samples the CPU that processes other than this tool, MariaDB and Redis use, once a second,
/// until it drops below `max_cores` or `max_secs` have passed.
async fn wait_for_quiet(max_cores: f64, max_secs: u64) {
    let ours = || {
        let colocated: f64 = COLOCATED.iter().filter_map(|name| cpu_secs(pid_of(name)?)).sum();
        own_cpu_secs() + colocated
    };
    let start = Instant::now();
    let mut last = 0.0;
    while start.elapsed().as_secs() < max_secs {
        let (Some(busy), before) = (machine_busy_secs(), ours()) else { return };
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let Some(busy_after) = machine_busy_secs() else { return };
        last = (busy_after - busy - (ours() - before)).max(0.0);
        if last < max_cores {
            if start.elapsed().as_secs() > 1 {
                println!("  waited {:.0} s for other processes to go quiet", start.elapsed().as_secs_f64());
            }
            return;
        }
    }
    println!("warning: other processes still used {last:.2} cores after {max_secs} s; measuring anyway");
}

/// Checks that the seqs acknowledged on each topic are unique and contiguous from 1, and says so.
fn report_seqs(per_topic: HashMap<String, Vec<i64>>) -> SeqCheck {
    let mut total = SeqCheck::default();
    let mut bad = Vec::new();
    for (topic, mut seqs) in per_topic {
        let check = check_seqs(&mut seqs);
        if check != SeqCheck::default() {
            bad.push(format!("{topic}: {} duplicate, {} missing of {}", check.duplicates, check.missing, seqs.len()));
        }
        total.duplicates += check.duplicates;
        total.missing += check.missing;
    }
    if bad.is_empty() {
        println!("  seq check: on every topic the acknowledged seqs are unique and contiguous from 1");
    } else {
        println!(
            "PROBLEM: acknowledged seqs are not unique and contiguous on {} topics: {}",
            bad.len(),
            bad.join("; ")
        );
    }
    total
}

/// CPU seconds spent during the run.
struct Cpu {
    server: Option<f64>,
    client: f64,
    colocated: Vec<(&'static str, f64)>,
    others: Option<f64>,
}

/// Merges the publishers' outcomes and prints the figures of the run.
fn report(args: &PublishArgs, outcomes: Vec<Outcome>, cpu: Cpu, setup_s: f64) -> Figures {
    let mut total = Outcome::default();
    let mut aborted = Vec::new();
    for (i, mut one) in outcomes.into_iter().enumerate() {
        total.sent += one.sent;
        total.acked += one.acked;
        total.rejected += one.rejected;
        total.rate_limited += one.rate_limited;
        total.echoes += one.echoes;
        total.peer_data += one.peer_data;
        total.acks_without_seq += one.acks_without_seq;
        for (code, n) in one.by_code {
            *total.by_code.entry(code).or_default() += n;
        }
        total.first_send = match (total.first_send, one.first_send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        total.last_ack = total.last_ack.max(one.last_ack);
        if total.acks_per_sec.len() < one.acks_per_sec.len() {
            total.acks_per_sec.resize(one.acks_per_sec.len(), 0);
        }
        for (sum, n) in total.acks_per_sec.iter_mut().zip(&one.acks_per_sec) {
            *sum += n;
        }
        total.ack_latency.append(&mut one.ack_latency);
        total.anomalies.merge(one.anomalies);
        if let Some(why) = one.aborted {
            aborted.push(format!("publisher {i}: {why}"));
        }
    }
    let wall_s = match (total.first_send, total.last_ack) {
        (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
        _ => 0.0,
    };
    let msg_per_s = if wall_s > 0.0 { total.acked as f64 / wall_s } else { 0.0 };
    let expected = (args.topics * args.publishers_per_topic) as u64 * args.messages;
    let ack = total.ack_latency.summary();
    println!(
        "run: sent {}/{expected}, accepted {} (ctrl 202), rejected {} in {wall_s:.2} s: {msg_per_s:.0} accepted msg/s",
        total.sent, total.acked, total.rejected
    );
    println!("  publish→ctrl 202 latency: {}", ack.line());
    println!("  accepted per second: {}", per_second_line(&total.acks_per_sec));
    let cores = |s: f64| format!("{s:.2} s ({:.2} cores)", s / wall_s.max(1e-9));
    let mut parts = vec![format!("server {}", cpu.server.map_or(String::from("unknown (no pid)"), cores))];
    parts.extend(cpu.colocated.iter().map(|(name, s)| format!("{name} {}", cores(*s))));
    parts.push(format!("client {}", cores(cpu.client)));
    if let Some(others) = cpu.others {
        parts.push(format!("other processes {}", cores(others)));
    }
    println!("  CPU over the run: {}", parts.join(", "));
    if !total.by_code.is_empty() {
        let codes: Vec<String> = total.by_code.iter().map(|(code, n)| format!("{code}×{n}")).collect();
        println!("PROBLEM: publishes rejected by code: {}", codes.join(", "));
    }
    if total.rate_limited > 0 {
        println!("PROBLEM: {} publishes refused: {RATE_LIMIT_HINT}", total.rate_limited);
    }
    if total.peer_data > 0 && !args.peers_read {
        println!("PROBLEM: {} {{data}} reached write-only publishers, which hold no R", total.peer_data);
    } else if args.peers_read {
        println!("  {} {{data}} delivered to peer publishers", total.peer_data);
    }
    if total.acks_without_seq > 0 {
        println!("PROBLEM: {} ctrl 202 carried no params.seq", total.acks_without_seq);
    }
    for why in aborted.iter().take(5) {
        println!("PROBLEM: a publisher stopped early: {why}");
    }
    total.anomalies.print("unexpected frames on the publishers");
    Figures {
        sent: total.sent,
        acked: total.acked,
        rejected: total.rejected,
        by_code: total.by_code,
        msg_per_s,
        wall_s,
        ack,
        server_cpu_s: cpu.server,
        client_cpu_s: cpu.client,
        colocated_cpu_s: cpu.colocated,
        others_cpu_s: cpu.others,
        setup_s,
        aborted: aborted.len(),
        seqs: SeqCheck::default(),
        outbox_produced: None,
        round_trips: None,
    }
}

/// The JSON line of one run; `prefix` keeps the keys of two modes apart in a comparison line.
pub(crate) fn put_figures(out: &mut JsonLine, prefix: &str, f: &Figures) {
    out.set(format!("{prefix}sent"), f.sent);
    out.set(format!("{prefix}acked"), f.acked);
    out.set(format!("{prefix}rejected"), f.rejected);
    let codes: serde_json::Map<String, serde_json::Value> =
        f.by_code.iter().map(|(code, n)| (code.to_string(), (*n).into())).collect();
    out.set(format!("{prefix}rejected_by_code"), codes);
    out.set(format!("{prefix}msg_per_s"), f.msg_per_s.round());
    out.set(format!("{prefix}wall_s"), round3(f.wall_s));
    out.set(format!("{prefix}ack_p50_ms"), round3(f.ack.p50_ms));
    out.set(format!("{prefix}ack_p99_ms"), round3(f.ack.p99_ms));
    out.set(format!("{prefix}ack_p999_ms"), round3(f.ack.p999_ms));
    out.set(format!("{prefix}ack_max_ms"), round3(f.ack.max_ms));
    if let Some(s) = f.server_cpu_s {
        out.set(format!("{prefix}server_cpu_s"), round3(s));
    }
    out.set(format!("{prefix}client_cpu_s"), round3(f.client_cpu_s));
    for (name, s) in &f.colocated_cpu_s {
        out.set(format!("{prefix}{}_cpu_s", name.replace('-', "_")), round3(*s));
    }
    if let Some(s) = f.others_cpu_s {
        out.set(format!("{prefix}others_cpu_s"), round3(s));
    }
    out.set(format!("{prefix}setup_s"), round3(f.setup_s));
    out.set(format!("{prefix}aborted_publishers"), f.aborted);
    out.set(format!("{prefix}seq_duplicates"), f.seqs.duplicates);
    out.set(format!("{prefix}seq_missing"), f.seqs.missing);
    if let Some(n) = f.outbox_produced {
        out.set(format!("{prefix}outbox_produced"), n);
    }
    if let Some(t) = f.round_trips {
        let per_msg = |n: f64| round3(n / f.acked.max(1) as f64);
        out.set(format!("{prefix}redis_round_trips_per_msg"), per_msg(t.redis));
        out.set(format!("{prefix}db_append_batches_per_msg"), per_msg(t.db_batches));
    }
}

/// The line that leads with `"bench":"publish"` and the shape of the load.
pub(crate) fn json_line(args: &PublishArgs, mode: &str, f: &Figures) -> JsonLine {
    let mut out = head(args, mode);
    put_figures(&mut out, "", f);
    out
}

/// The fields every publish line starts with.
pub(crate) fn head(args: &PublishArgs, mode: &str) -> JsonLine {
    let mut out = JsonLine::new("publish");
    if !mode.is_empty() {
        out.set("mode", mode);
    }
    out.set("topics", args.topics);
    out.set("publishers_per_topic", args.publishers_per_topic);
    out.set("messages", args.messages);
    out.set("window", args.window);
    out.set("client_mid", args.client_mid);
    out.set("peers_read", args.peers_read);
    out
}
