//! Measures the Redis part of the publish path: per message an idempotency claim, a seq allocation and the
//! completion, from N concurrent tasks, and compares it with what `redis-benchmark` gets from the same Redis
//! for the same three commands. Prints figures; asserts nothing.
//!
//! ```text
//! cargo run --release -p palaver-store-redis --example seq_bench -- [tasks] [messages] [topics]
//! ```
//!
//! Redis comes from `PALAVER_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`). Keys go under a fresh
//! prefix with one-minute TTLs, and the seq counters are deleted at the end.

use palaver_core::ports::{IdempotencyStore, SeqAllocator};
use palaver_core::{Claim, TenantId, UserId};
use palaver_store_redis::{RedisClient, RedisConfig, RedisIdempotency, RedisSeq};
use std::process::Command;
use std::time::Instant;

const TENANT: TenantId = TenantId(1);

/// The command line, positionally: concurrent tasks, messages in all, topics they spread over.
struct Args {
    tasks: usize,
    messages: usize,
    topics: usize,
}

fn args() -> Args {
    let mut it = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let mut next = |default: usize| it.next().flatten().unwrap_or(default).max(1);
    Args { tasks: next(16), messages: next(20_000), topics: next(8) }
}

/// Host and port of a `redis://host:port[/db]` URL, for `redis-benchmark`.
fn host_port(url: &str) -> (String, String) {
    let rest = url.trim_start_matches("redis://");
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    let hostport = rest.split('/').next().unwrap_or(rest);
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.to_owned()),
        None => (hostport.to_owned(), "6379".to_owned()),
    }
}

/// Runs the publish path's Redis calls from `args.tasks` tasks; answers messages per second.
async fn ours(client: &RedisClient, args: &Args, run: &'static str) -> Result<f64, String> {
    let seq = RedisSeq::new(client.clone());
    let idem = RedisIdempotency::new(client.clone());
    let per_task = args.messages.div_ceil(args.tasks);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..args.tasks {
        let (seq, idem, topics) = (seq.clone(), idem.clone(), args.topics);
        tasks.push(tokio::spawn(async move {
            for i in 0..per_task {
                let topic = format!("grpBench{}", (task + i) % topics);
                let (from, mid) = (UserId(1 + task as u64), format!("{run}-m{task}-{i}"));
                if idem.claim(TENANT, &topic, from, &mid).await.map_err(|e| e.to_string())? != Claim::Acquired {
                    return Err(format!("claim of a fresh key {mid} was not acquired"));
                }
                let s = seq.next_seq(TENANT, &topic, 0).await.map_err(|e| e.to_string())?;
                idem.complete(TENANT, &topic, from, &mid, s).await.map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok((per_task * args.tasks) as f64 / started.elapsed().as_secs_f64())
}

/// Requests per second `redis-benchmark` reports for one command, or `None` if it is missing or failed.
fn redis_benchmark(url: &str, args: &Args, random_keys: usize, command: &[&str]) -> Option<f64> {
    let (host, port) = host_port(url);
    let (clients, requests, keys) = (args.tasks.to_string(), args.messages.to_string(), random_keys.to_string());
    let output = Command::new("redis-benchmark")
        .args(["-h", &host, "-p", &port, "-c", &clients, "-n", &requests, "-r", &keys, "-q", "--csv"])
        .args(command)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    // The CSV has an optional header, then `"name","rps",…`; the last line holds the figure.
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    last.split(',').nth(1)?.trim_matches('"').parse().ok()
}

async fn compare(client: &RedisClient, url: &str, args: &Args, ours: f64) {
    let prefix = client.keys().prefix().to_owned();
    let sha = RedisSeq::new(client.clone()).next_seq_script_sha().to_owned();
    // EVALSHA needs the script loaded; the adapter loads it lazily, so load it explicitly here.
    let loaded: Result<String, _> =
        client.query(redis::cmd("SCRIPT").arg("LOAD").arg(RedisSeq::next_seq_script_source())).await;
    if loaded.as_deref() != Ok(sha.as_str()) {
        println!("could not load the seq script ({loaded:?}); skipping the redis-benchmark comparison");
        return;
    }
    let uniq = format!("{prefix}:rb:uniq:__rand_int__");
    let seq_key = format!("{prefix}:rb:seq:__rand_int__");
    let claim = redis_benchmark(url, args, 1_000_000_000, &["SET", &uniq, "pending", "NX", "EX", "60"]);
    let next = redis_benchmark(url, args, args.topics, &["EVALSHA", &sha, "1", &seq_key, "0"]);
    let done = redis_benchmark(url, args, 1_000_000_000, &["SET", &uniq, "done", "EX", "60"]);
    let (Some(claim), Some(next), Some(done)) = (claim, next, done) else {
        println!("redis-benchmark is not installed or failed; no comparison (apt-get install redis-tools)");
        return;
    };
    println!("redis-benchmark, {} clients, unpipelined:", args.tasks);
    println!("  SET NX EX (claim)        {claim:>10.0} req/s");
    println!("  EVALSHA seq script       {next:>10.0} req/s");
    println!("  SET EX (complete)        {done:>10.0} req/s");
    // Three commands in sequence per message: the ceiling is the harmonic combination of the three rates.
    let ceiling = 1.0 / (1.0 / claim + 1.0 / next + 1.0 / done);
    println!("  => ceiling for claim + seq + complete: {ceiling:.0} msg/s");
    println!("adapter / redis-benchmark ceiling: {:.2}", ours / ceiling);
    for i in 0..args.topics {
        let _: Result<i64, _> = client.query(redis::cmd("DEL").arg(format!("{prefix}:rb:seq:{i:012}"))).await;
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    let url = std::env::var("PALAVER_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let config = RedisConfig {
        key_prefix: format!("bench{:08x}", rand::random::<u32>()),
        pool_size: args.tasks.clamp(1, 64),
        pending_ttl_seconds: 60,
        done_ttl_seconds: 60,
        failed_ttl_seconds: 60,
        ..RedisConfig::with_addr(url.clone())
    };
    let client = match RedisClient::connect(config) {
        Ok(client) => client,
        Err(e) => return println!("bad Redis settings: {e}"),
    };
    if let Err(e) = client.ping().await {
        return println!(
            "Redis at {url} is unreachable ({e}); start it with `. scripts/lib/services.sh && start_redis`"
        );
    }
    println!(
        "seq_bench: {} messages, {} tasks, {} topics, Redis {url} (3 Redis round trips per message)",
        args.messages, args.tasks, args.topics
    );
    // One short warm-up run loads the scripts and fills the pool, so the timed run measures steady state.
    let warm = Args { messages: args.tasks * 10, ..args };
    if let Err(e) = ours(&client, &warm, "warm").await {
        return println!("warm-up failed: {e}");
    }
    let rate = match ours(&client, &args, "timed").await {
        Ok(rate) => rate,
        Err(e) => return println!("bench failed: {e}"),
    };
    println!("adapter: {rate:.0} msg/s = {:.0} Redis ops/s (claim + next_seq + complete)", rate * 3.0);
    let m = client.metrics().snapshot();
    println!("  commands {} failed {}", m.commands, m.command_failures);
    compare(&client, &url, &args, rate).await;
    let keys = client.keys().clone();
    for i in 0..args.topics {
        let _: Result<i64, _> =
            client.query(redis::cmd("DEL").arg(keys.topic_last_seq(TENANT, &format!("grpBench{i}")))).await;
    }
}
