//! `admin`: admin commands/s end to end on a cluster. The tool is the Admin Server: it produces commands to the
//! admin command topic with rdkafka (keyed `{tenant}:{user}`, as the nodes key them) and reads their results from
//! the result topic, so a figure covers Kafka in, a node's consumer, the ledger, the effect (a disable or an
//! enable of a user: state, `auth_version`, session control), the outbox and the relay, and Kafka out.
//!
//! With `--spawn`, `--nodes` nodes start on fresh MariaDB databases, Redis keys, Kafka topics and consumer group
//! and are removed afterwards; with `--addr`, the running cluster's topics are named by `--command-topic` and
//! `--result-topic`. It prints commands/s, produce→result latency and an exactly-once check: one result per
//! command, none missing, none twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use futures_util::StreamExt;
use rdkafka::Message;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::client::{self, bounded};
use crate::scaleout::{self, Fresh, ScaleoutArgs};
use crate::stats::{JsonLine, Samples, round3};
use crate::target::{Target, TargetArgs};

/// How long the run waits for the last results once every command is produced.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Options of the admin command benchmark.
#[derive(Args, Debug, Clone)]
pub(crate) struct AdminArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) scaleout: ScaleoutArgs,
    /// Nodes to spawn (with --spawn); they share the run's databases, Redis keys, topics and consumer group.
    #[arg(long, default_value_t = 2)]
    pub(crate) nodes: usize,
    /// Measured commands.
    #[arg(long, default_value_t = 2000)]
    pub(crate) commands: usize,
    /// Users the commands target; each user's commands alternate user.disable and user.enable.
    #[arg(long, default_value_t = 64)]
    pub(crate) users: usize,
    /// Commands produced whose result has not arrived yet, at most.
    #[arg(long, default_value_t = 256)]
    pub(crate) window: usize,
    /// Commands run before the measured part (not counted), while the nodes' consumers settle in their group.
    #[arg(long, default_value_t = 50)]
    pub(crate) warmup: usize,
    /// Without --spawn: the running cluster's admin command topic.
    #[arg(long, default_value = "im.admin.command")]
    pub(crate) command_topic: String,
    /// Without --spawn: the running cluster's result topic.
    #[arg(long, default_value = "im.admin.command.result")]
    pub(crate) result_topic: String,
    /// The tenant the commands name (`tenant_id`) and the users sign up in: the `default` tenant is 1.
    #[arg(long, default_value = "1")]
    pub(crate) tenant: String,
}

/// Produce instants by command id and what came back.
#[derive(Default)]
struct Ledger {
    sent: HashMap<String, Instant>,
    /// Results per command id of this run.
    results: HashMap<String, u32>,
    latency: Samples,
    by_status: HashMap<String, u64>,
    by_node: HashMap<String, u64>,
    last_result: Option<Instant>,
}

pub(crate) async fn run(args: AdminArgs) -> Result<()> {
    if args.commands == 0 || args.users == 0 {
        bail!("--commands and --users must be at least 1");
    }
    let tag = crate::run_tag();
    let spawned = args.target.spawn.is_some();
    let fresh = spawned.then(|| Fresh::new(&tag, true));
    let mut target_args = args.target.clone();
    if let Some(fresh) = &fresh {
        scaleout::check_config(&args.scaleout.scaleout_config)?;
        target_args.server_args.splice(0..0, scaleout::server_args(&args.scaleout.scaleout_config));
        target_args.server_env.extend(fresh.env(&args.scaleout));
        // Every node of a cluster signs tokens with the same key.
        let key = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, tag.repeat(4));
        target_args.server_env.push(("PALAVER_AUTH__TOKEN_KEY".into(), key));
        println!("admin run: {}", fresh.describe());
    }
    let result = measure(&args, &target_args, fresh.as_ref(), &tag).await;
    if let Some(fresh) = &fresh {
        fresh.clean_up(&args.scaleout).await;
    }
    result
}

async fn measure(args: &AdminArgs, target_args: &TargetArgs, fresh: Option<&Fresh>, tag: &str) -> Result<()> {
    let nodes = Target::open_nodes(target_args, if fresh.is_some() { args.nodes } else { 1 }).await?;
    let (command_topic, result_topic) = match fresh {
        Some(f) => (f.topic("admin_command").unwrap_or_default(), f.topic("admin_result").unwrap_or_default()),
        None => (args.command_topic.clone(), args.result_topic.clone()),
    };
    let users = sign_up(&nodes[0], args.users, tag).await?;
    let brokers = &args.scaleout.brokers;
    let producer: FutureProducer = scaleout::kafka_client(brokers)
        .set("enable.idempotence", "true")
        .set("linger.ms", "1")
        .create()
        .context("a Kafka producer")?;
    let consumer: StreamConsumer = scaleout::kafka_client(brokers)
        .set("group.id", format!("palaver-bench-{tag}"))
        .set("enable.auto.commit", "false")
        // From the start: a result that lands before the group has its partitions is still read.
        .set("auto.offset.reset", "earliest")
        .create()
        .context("a Kafka consumer")?;
    consumer.subscribe(&[&result_topic]).context("subscribing to the results")?;
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let window = Arc::new(Semaphore::new(args.window.max(1)));
    let reader = tokio::spawn(read_results(consumer, ledger.clone(), window.clone(), tag.to_owned()));
    let plan = Plan { producer: &producer, topic: &command_topic, tenant: &args.tenant, users: &users, tag };

    // The warm-up's results show that the nodes' consumers have joined their group; nothing of it is measured.
    println!("warm-up: {} commands", args.warmup);
    let warm_start = Instant::now();
    let warm_ids = plan.produce(&window, "w", 0, args.warmup, &ledger).await?;
    if !wait_for(&ledger, &warm_ids, Duration::from_secs(90)).await {
        bail!("the warm-up's commands got no results within 90 s (are the nodes consuming {command_topic}?)");
    }
    println!("warm-up done in {:.1} s", warm_start.elapsed().as_secs_f64());
    reset(&ledger, &warm_ids);

    let cpu_before: Vec<Option<f64>> = nodes.iter().map(Target::cpu_secs).collect();
    let start = Instant::now();
    let ids = plan.produce(&window, "m", 0, args.commands, &ledger).await?;
    let produced_s = start.elapsed().as_secs_f64();
    let complete = wait_for(&ledger, &ids, DRAIN_TIMEOUT).await;
    // Results that a redelivery would publish again arrive a little later: give them a moment to show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu: Vec<Option<f64>> =
        nodes.iter().zip(&cpu_before).map(|(n, b)| n.cpu_secs().zip(*b).map(|(a, b)| a - b)).collect();
    reader.abort();
    let mut l = std::mem::take(&mut *ledger.lock().unwrap_or_else(|e| e.into_inner()));
    let check = Check::of(&l, &ids);
    let wall_s = l.last_result.map_or(0.0, |t| t.saturating_duration_since(start).as_secs_f64());
    let per_s = if wall_s > 0.0 { check.results_once as f64 / wall_s } else { 0.0 };
    let lat = l.latency.summary();
    println!(
        "admin commands: {} produced in {produced_s:.2} s, {} with one result, in {wall_s:.2} s: {per_s:.0} commands/s \
         end to end on {} node(s), window {}",
        args.commands,
        check.results_once,
        nodes.len(),
        args.window
    );
    println!("  produce→result latency: {}", lat.line());
    println!("  results by status: {:?}; by node: {:?}", l.by_status, l.by_node);
    let cores: Vec<String> =
        cpu.iter().map(|c| c.map_or("?".into(), |s| format!("{:.2}", s / wall_s.max(1e-9)))).collect();
    println!("  server CPU over the run (cores per node): {}", cores.join(", "));
    if check.missing > 0 || check.duplicated > 0 || !complete {
        println!(
            "PROBLEM: exactly-once check failed: {} without a result, {} with more than one",
            check.missing, check.duplicated
        );
    } else {
        println!("  exactly-once check: {} commands, {} results, none missing, none twice", ids.len(), check.results);
    }
    for node in &nodes {
        node.report_log_problems();
    }
    let mut out = JsonLine::new("admin");
    out.set("nodes", nodes.len()).set("commands", args.commands).set("users", args.users).set("window", args.window);
    out.set("commands_per_s", per_s.round()).set("wall_s", round3(wall_s));
    lat.put(&mut out, "latency_");
    out.set("results", check.results).set("missing", check.missing).set("duplicated", check.duplicated);
    out.set("succeeded", *l.by_status.get("succeeded").unwrap_or(&0));
    println!("{out}");
    for node in nodes {
        node.finish();
    }
    Ok(())
}

/// Signs up the users the commands target and closes their sessions (a disable would close them anyway).
async fn sign_up(target: &Target, n: usize, tag: &str) -> Result<Vec<String>> {
    let start = Instant::now();
    let done = bounded("sign-ups", n, 4, |i| async move {
        let conn = client::new_user(target, 4096, &format!("adm{tag}{i}"), &format!("admin bench {i}")).await?;
        Ok(conn.user.clone())
    })
    .await;
    let mut users = Vec::with_capacity(n);
    for (i, r) in done {
        users.push(r.with_context(|| format!("user {i}"))?);
    }
    println!("setup: {n} users in {:.1} s", start.elapsed().as_secs_f64());
    Ok(users)
}

/// What the commands are made of.
struct Plan<'a> {
    producer: &'a FutureProducer,
    topic: &'a str,
    tenant: &'a str,
    users: &'a [String],
    tag: &'a str,
}

impl Plan<'_> {
    /// Produces commands `from..from + n` (ids `bench-{tag}-{phase}{i}`), at most `window` awaiting results;
    /// command `i` targets user `i % users`, disabling on even rounds and enabling on odd ones.
    async fn produce(
        &self,
        window: &Arc<Semaphore>,
        phase: &str,
        from: usize,
        n: usize,
        ledger: &Arc<Mutex<Ledger>>,
    ) -> Result<Vec<String>> {
        let mut ids = Vec::with_capacity(n);
        let mut acks = futures_util::stream::FuturesUnordered::new();
        for i in from..from + n {
            let permit = tokio::time::timeout(DRAIN_TIMEOUT, window.clone().acquire_owned())
                .await
                .context("no results for a minute with the window full")??;
            permit.forget();
            let user = &self.users[i % self.users.len()];
            let kind = if (i / self.users.len()).is_multiple_of(2) { "user.disable" } else { "user.enable" };
            let id = format!("bench-{}-{phase}{i}", self.tag);
            let body = json!({ "command_id": id, "tenant_id": self.tenant, "type": kind,
                "actor": { "type": "bench", "id": "palaver-bench" }, "request_id": id, "payload": { "user": user } })
            .to_string();
            let key = format!("{}:{user}", self.tenant);
            ledger.lock().unwrap_or_else(|e| e.into_inner()).sent.insert(id.clone(), Instant::now());
            let record = FutureRecord::to(self.topic).key(&key).payload(&body);
            let delivery = self.producer.send_result(record).map_err(|(e, _)| e).context("producing a command")?;
            acks.push(delivery);
            ids.push(id);
        }
        while let Some(ack) = acks.next().await {
            match ack {
                Ok(Ok(_)) => {}
                Ok(Err((e, _))) => bail!("a command was not produced: {e}"),
                Err(_) => bail!("the producer went away"),
            }
        }
        Ok(ids)
    }
}

/// Reads results, matching this run's command ids; each first result frees a window slot.
async fn read_results(consumer: StreamConsumer, ledger: Arc<Mutex<Ledger>>, window: Arc<Semaphore>, tag: String) {
    let prefix = format!("bench-{tag}-");
    let mut stream = consumer.stream();
    while let Some(m) = stream.next().await {
        let Ok(m) = m else { continue };
        let now = Instant::now();
        let Some(value) = m.payload().and_then(|p| serde_json::from_slice::<Value>(p).ok()) else { continue };
        let Some(id) = value.get("command_id").and_then(Value::as_str).filter(|id| id.starts_with(&prefix)) else {
            continue;
        };
        let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
        let Some(sent) = l.sent.get(id).copied() else { continue };
        let n = l.results.entry(id.to_owned()).or_default();
        *n += 1;
        if *n == 1 {
            l.latency.push(now.saturating_duration_since(sent).as_micros() as i64);
            let status = value.get("status").and_then(Value::as_str).unwrap_or("?").to_owned();
            *l.by_status.entry(status).or_default() += 1;
            let node = value.get("node").and_then(Value::as_str).unwrap_or("?").to_owned();
            *l.by_node.entry(node).or_default() += 1;
            l.last_result = Some(now);
            window.add_permits(1);
        }
    }
}

/// Waits until every id has a result; false at the deadline.
async fn wait_for(ledger: &Arc<Mutex<Ledger>>, ids: &[String], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let missing = {
            let l = ledger.lock().unwrap_or_else(|e| e.into_inner());
            ids.iter().filter(|id| !l.results.contains_key(*id)).count()
        };
        if missing == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            println!("  {missing} of {} commands have no result after {} s", ids.len(), limit.as_secs());
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Forgets the warm-up's figures (its ids stay known, so its late duplicates are not mistaken for this run's).
fn reset(ledger: &Arc<Mutex<Ledger>>, warm: &[String]) {
    let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
    let dupes = warm.iter().filter(|id| l.results.get(*id).is_some_and(|n| *n > 1)).count();
    if dupes > 0 {
        println!("PROBLEM: {dupes} warm-up commands had more than one result");
    }
    l.latency = Samples::default();
    l.by_status.clear();
    l.by_node.clear();
    l.last_result = None;
}

/// The exactly-once check over the measured ids.
struct Check {
    results: u64,
    results_once: u64,
    missing: u64,
    duplicated: u64,
}

impl Check {
    fn of(l: &Ledger, ids: &[String]) -> Check {
        let mut c = Check { results: 0, results_once: 0, missing: 0, duplicated: 0 };
        for id in ids {
            match l.results.get(id).copied().unwrap_or(0) {
                0 => c.missing += 1,
                n => {
                    c.results += n as u64;
                    c.results_once += 1;
                    c.duplicated += u64::from(n > 1);
                }
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_counts_missing_and_repeated_results() {
        let mut l = Ledger::default();
        l.results.insert("a".into(), 1);
        l.results.insert("b".into(), 2);
        let ids = ["a", "b", "c"].map(String::from);
        let c = Check::of(&l, &ids);
        assert_eq!((c.results, c.results_once, c.missing, c.duplicated), (3, 2, 1, 1));
    }
}
