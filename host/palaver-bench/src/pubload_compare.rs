//! `publish --compare`: the same load against a spawned embedded server and a spawned scale-out server
//! (MariaDB + Redis + Kafka, each run on fresh databases, a fresh Redis key prefix and fresh topics), printed side
//! by side. `publish --compare-kafka`: the same load against a scale-out node without `[kafka]` (the embedded
//! queue) and with it, printed side by side with the ratio: what the outbox and Kafka cost the publish path.

use anyhow::{Context, Result, ensure};
use clap::Args;

use crate::pubload::{self, Figures, PublishArgs};
use crate::scaleout::{self, Fresh, ScaleoutArgs};
use crate::stats::round3;

/// The throughput the scale-out mode should reach per node.
const TARGET_SCALEOUT_MSG_PER_S: f64 = 10_000.0;
/// The largest share of accepted msg/s that producing through the outbox to Kafka may cost.
const MAX_KAFKA_COST: f64 = 0.05;

/// Options of the comparison.
#[derive(Args, Debug, Clone)]
pub(crate) struct CompareArgs {
    /// Run the load twice, against a spawned embedded server and a spawned scale-out server (needs --spawn).
    #[arg(long, conflicts_with = "compare_kafka")]
    pub(crate) compare: bool,
    /// Run the load twice against a spawned scale-out node (needs --spawn): its configuration without `[kafka]`
    /// (the embedded queue), then with it (fresh topics); prints both and the ratio.
    #[arg(long, conflicts_with = "compare_push")]
    pub(crate) compare_kafka: bool,
    /// Run the load twice against a spawned server (needs --spawn): push off, then push on through a webhook
    /// to a local sink, with one offline member holding a device per group in both runs; prints both, the
    /// cost and the pushes/s the worker reached.
    #[arg(long, conflicts_with = "compare")]
    pub(crate) compare_push: bool,
    /// With --compare-push: run its three loads this many times, one after the other, and judge the median
    /// costs (one pass's cost moves by several percent between passes on a shared machine).
    #[arg(long, default_value_t = 1, requires = "compare_push")]
    pub(crate) rounds: usize,
    #[command(flatten)]
    pub(crate) scaleout: ScaleoutArgs,
}

/// Runs both modes, prints the table, the verdict and the final JSON line.
pub(crate) async fn run(args: &PublishArgs) -> Result<()> {
    let so = &args.compare.scaleout;
    ensure!(args.target.spawn.is_some(), "--compare starts both servers itself, so it needs --spawn PATH");
    scaleout::check_config(&so.scaleout_config)?;
    let embedded = pubload::measure(&args.target, args, "embedded").await.context("the embedded run")?;
    println!();
    let scaleout = scaleout_run(args, &so.scaleout_config, true, "scale-out").await?;
    print_table(args, &embedded, &scaleout);
    Ok(())
}

/// One run against a spawned scale-out node on fresh names; `kafka` says whether the node's configuration keeps
/// its `[kafka]` tables (on fresh topics).
async fn scaleout_run(args: &PublishArgs, config: &std::path::Path, kafka: bool, label: &str) -> Result<Figures> {
    let so = &args.compare.scaleout;
    let fresh = Fresh::new(&crate::run_tag(), kafka);
    let mut target = args.target.clone();
    target.server_args.splice(0..0, scaleout::server_args(config));
    target.server_env.extend(fresh.env(so));
    println!("{label} run: {}", fresh.describe());
    let figures = pubload::measure(&target, args, label).await;
    fresh.clean_up(so).await;
    figures.with_context(|| format!("the {label} run"))
}

/// `--compare-kafka`: the scale-out node without and with `[kafka]`, side by side with the ratio.
pub(crate) async fn run_kafka(args: &PublishArgs) -> Result<()> {
    let so = &args.compare.scaleout;
    ensure!(args.target.spawn.is_some(), "--compare-kafka starts the servers itself, so it needs --spawn PATH");
    scaleout::check_config(&so.scaleout_config)?;
    let text = std::fs::read_to_string(&so.scaleout_config)
        .with_context(|| format!("reading {}", so.scaleout_config.display()))?;
    ensure!(text.contains("[kafka]"), "--compare-kafka needs a --scaleout-config with a [kafka] table");
    let dir = tempfile::tempdir().context("a temp dir for the configuration without [kafka]")?;
    let plain = dir.path().join("no-kafka.toml");
    std::fs::write(&plain, scaleout::without_kafka(&text)).context("writing the configuration without [kafka]")?;
    let without = scaleout_run(args, &plain, false, "no kafka").await?;
    println!();
    let with = scaleout_run(args, &so.scaleout_config, true, "kafka").await?;
    print_kafka_table(args, &without, &with);
    Ok(())
}

/// Prints both runs side by side, the verdict on the scale-out target and the final JSON line.
fn print_table(args: &PublishArgs, embedded: &Figures, scaleout: &Figures) {
    side_by_side(args, ["publish compare", "ratio s/e"], ("embedded", embedded), ("scale-out", scaleout));
    let verdict = if scaleout.msg_per_s >= TARGET_SCALEOUT_MSG_PER_S { "meets" } else { "MISSES" };
    println!(
        "verdict: scale-out {:.0} accepted msg/s (target ≥ {TARGET_SCALEOUT_MSG_PER_S:.0} per node: {verdict}); \
         measured with client, MariaDB and Redis on the same 2 cores as the server",
        scaleout.msg_per_s
    );
    let mut out = pubload::head(args, "compare");
    pubload::put_figures(&mut out, "embedded_", embedded);
    pubload::put_figures(&mut out, "scaleout_", scaleout);
    out.set("ratio_msg_per_s", round3(ratio(scaleout.msg_per_s, embedded.msg_per_s)));
    out.set("ratio_ack_p99", round3(ratio(scaleout.ack.p99_ms, embedded.ack.p99_ms)));
    out.set("scaleout_target_msg_per_s", TARGET_SCALEOUT_MSG_PER_S);
    println!("{out}");
}

/// Prints the node without and with Kafka side by side, the cost against the target and the final JSON line.
fn print_kafka_table(args: &PublishArgs, without: &Figures, with: &Figures) {
    side_by_side(
        args,
        ["publish compare-kafka (one scale-out node)", "ratio k/nk"],
        ("no kafka", without),
        ("kafka", with),
    );
    let relayed = |f: &Figures| f.outbox_produced.map_or(String::from("unknown"), |n| format!("{n:.0}"));
    println!(
        "  outbox entries relayed to the queue during the load: {} without, {} with Kafka",
        relayed(without),
        relayed(with)
    );
    let cost = 1.0 - ratio(with.msg_per_s, without.msg_per_s);
    let cpu = |f: &Figures| f.server_cpu_s.map_or(f64::NAN, |s| s * 1e6 / f.acked.max(1) as f64);
    let cpu_cost = ratio(cpu(with), cpu(without)) - 1.0;
    let verdict = if cost <= MAX_KAFKA_COST { "meets" } else { "MISSES" };
    // A negative cost is the noise of one run each on a shared machine, not a speed-up Kafka brings.
    let shown = if cost < 0.0 {
        String::from("nothing measurable (faster with Kafka)")
    } else {
        format!("{:.1} %", cost * 100.0)
    };
    println!(
        "verdict: Kafka costs {shown} of accepted msg/s (target ≤ {:.0} %: {verdict}) and {:+.1} % server CPU per \
         message; one run each, on a shared 2-core machine (see other processes' CPU above)",
        MAX_KAFKA_COST * 100.0,
        cpu_cost * 100.0
    );
    let mut out = pubload::head(args, "compare-kafka");
    pubload::put_figures(&mut out, "nokafka_", without);
    pubload::put_figures(&mut out, "kafka_", with);
    out.set("ratio_msg_per_s", round3(ratio(with.msg_per_s, without.msg_per_s)));
    out.set("ratio_ack_p99", round3(ratio(with.ack.p99_ms, without.ack.p99_ms)));
    out.set("kafka_cost", round3(cost));
    out.set("kafka_cost_target", MAX_KAFKA_COST);
    println!("{out}");
}

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// The rows both comparisons print: throughput, ack latency, CPU per message and rejections, with b/a.
pub(crate) fn side_by_side(
    args: &PublishArgs,
    title: [&str; 2],
    (name_a, a): (&str, &Figures),
    (name_b, b): (&str, &Figures),
) {
    let [title, head] = title;
    let per_msg = |s: f64, f: &Figures| s * 1e6 / f.acked.max(1) as f64;
    let cpu_per_msg = |f: &Figures| f.server_cpu_s.map_or(f64::NAN, |s| per_msg(s, f));
    // Server, client and the co-located services: what one message costs the whole 2-core box.
    let box_per_msg = |f: &Figures| {
        let colocated: f64 = f.colocated_cpu_s.iter().map(|(_, s)| s).sum();
        per_msg(f.server_cpu_s.unwrap_or(0.0) + f.client_cpu_s + colocated, f)
    };
    println!();
    println!(
        "{title}: {} topics × {} publishers × {} messages, window {}, client_mid {}",
        args.topics,
        args.publishers_per_topic,
        args.messages,
        args.window,
        if args.client_mid { "on" } else { "off" }
    );
    println!("  {:<26} {name_a:>12} {name_b:>12} {head:>12}", "");
    let trips = |f: &Figures, pick: fn(&crate::pubload::RoundTrips) -> f64| {
        f.round_trips.as_ref().map_or(f64::NAN, |t| pick(t) / f.acked.max(1) as f64)
    };
    let (redis, batches) = (|t: &crate::pubload::RoundTrips| t.redis, |t: &crate::pubload::RoundTrips| t.db_batches);
    let rows: [(&str, f64, f64); 10] = [
        ("accepted msg/s", a.msg_per_s, b.msg_per_s),
        ("ack p50 ms", a.ack.p50_ms, b.ack.p50_ms),
        ("ack p99 ms", a.ack.p99_ms, b.ack.p99_ms),
        ("ack p99.9 ms", a.ack.p999_ms, b.ack.p999_ms),
        ("ack max ms", a.ack.max_ms, b.ack.max_ms),
        ("server CPU µs per message", cpu_per_msg(a), cpu_per_msg(b)),
        ("box CPU µs per message", box_per_msg(a), box_per_msg(b)),
        ("rejected", a.rejected as f64, b.rejected as f64),
        ("Redis round trips per msg", trips(a, redis), trips(b, redis)),
        ("MariaDB batches per msg", trips(a, batches), trips(b, batches)),
    ];
    for (name, x, y) in rows {
        let r = ratio(y, x);
        let r = if r.is_finite() { format!("{r:.3}") } else { String::from("-") };
        println!("  {name:<26} {x:>12.3} {y:>12.3} {r:>12}");
    }
}
