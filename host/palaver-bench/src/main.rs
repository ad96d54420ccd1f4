//! palaver-bench: a load tool that speaks the Tinode JSON protocol over real WebSockets and prints figures.
//!
//! It never asserts anything: every subcommand prints human-readable lines and then one JSON line per run,
//! so the figures can be pasted into notes. It only ever connects to the loopback address it was given.
//!
//! ```text
//! palaver-bench idle   --spawn target/release/palaver --conns 10000
//! palaver-bench fanout --spawn target/release/palaver --members 1000 --messages 500 --find-max
//! palaver-bench fanout --addr 127.0.0.1:6060 --pid <server pid> --members 100 --messages 200 --rate 100
//! palaver-bench p2p    --spawn target/release/palaver --pairs 10 --messages 1000
//! palaver-bench publish --spawn target/release/palaver --topics 16 --publishers-per-topic 4 --messages 5000
//! palaver-bench publish --spawn target/release/palaver --topics 16 --publishers-per-topic 4 --compare
//! palaver-bench publish --spawn target/release/palaver --topics 16 --publishers-per-topic 4 --compare-kafka
//! palaver-bench publish --spawn target/release/palaver --topics 8 --publishers-per-topic 2 --compare-push
//! palaver-bench admin --spawn target/release/palaver --nodes 2 --commands 2000
//! palaver-bench business --spawn target/release/palaver --server-env PALAVER_PLUGINS__DIR=target/plugins/deploy
//! palaver-bench topics --spawn target/release/palaver --topics 100000 --server-env PALAVER_LIMITS__RATE_PER_SECOND=0 \
//!     --server-env PALAVER_LIMITS__MAX_GROUPS_PER_USER=0 --server-env PALAVER_LIMITS__MAX_LOADED_TOPICS=10000
//! ```
//!
//! `--spawn PATH` starts `PATH serve --listen 127.0.0.1:<free port> --data-dir <temp dir>`, waits for
//! `GET /readyz` to answer 200 and kills the server at the end; it also lets the tool read the server's RSS
//! and CPU time from /proc (as `--pid` does for a server started by hand).

mod admin;
mod business;
mod client;
mod fanout;
mod fanout_run;
mod frames;
mod idle;
mod members;
mod p2p;
mod park;
mod publish;
mod pubload;
mod pubload_compare;
mod pubload_push;
mod pubload_setup;
mod rule_cost;
mod scaleout;
mod stats;
mod target;
mod topics;

use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// Command line of the load tool.
#[derive(Parser, Debug)]
#[command(name = "palaver-bench", version, about)]
struct Cli {
    /// Hard limit on the whole run, so that the tool always stops by itself.
    #[arg(long, global = true, default_value_t = 900)]
    max_secs: u64,
    /// Tokio worker threads for the load generator (the machine has 2 cores, shared with the server).
    #[arg(long, global = true, default_value_t = 2)]
    threads: usize,
    #[command(subcommand)]
    cmd: Command,
}

/// The load shapes.
#[derive(Subcommand, Debug)]
enum Command {
    /// Open N WebSocket connections that send {hi} and then stay idle; print accept rate and server RSS.
    Idle(idle::IdleArgs),
    /// One publisher and M members in one group; print deliveries/s and publish→receive latency.
    Fanout(fanout::FanoutArgs),
    /// Pairs of users ping-pong over P2P topics; print round-trip latency.
    P2p(p2p::P2pArgs),
    /// T groups × P publishers send as fast as their windows allow; print accepted msg/s and ack latency.
    /// With --compare, the same load against an embedded and a scale-out server, side by side; with
    /// --compare-kafka, against a scale-out node without and with `[kafka]`; with --compare-push, push off and on
    /// (pushes/s through the worker to a local webhook sink).
    Publish(pubload::PublishArgs),
    /// Admin commands produced to Kafka and their results read back, on a spawned cluster of --nodes nodes;
    /// print commands/s, produce→result latency and the exactly-once check.
    Admin(admin::AdminArgs),
    /// Friend requests over the /v1/im/ HTTP API; print requests/s, latency, and the plugin's share of it.
    Business(business::BusinessArgs),
    /// One user creates N groups and publishes once to each; print loaded topics and server RSS growth.
    Topics(topics::TopicsArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads.max(1))
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    let limit = Duration::from_secs(cli.max_secs);
    runtime.block_on(async move {
        let run = async {
            match cli.cmd {
                Command::Idle(args) => idle::run(args).await,
                Command::Fanout(args) => fanout::run(args).await,
                Command::P2p(args) => p2p::run(args).await,
                Command::Publish(args) => pubload::run(args).await,
                Command::Business(args) => business::run(args).await,
                Command::Admin(args) => admin::run(args).await,
                Command::Topics(args) => topics::run(args).await,
            }
        };
        match tokio::time::timeout(limit, run).await {
            Ok(result) => result,
            Err(_) => anyhow::bail!("the run exceeded --max-secs {}; stopping", limit.as_secs()),
        }
    })?;
    // Shutting the runtime down in the background keeps thousands of open sockets from delaying the exit.
    runtime.shutdown_background();
    Ok(())
}

/// Raises the soft RLIMIT_NOFILE towards `wanted` and tells the user when even the hard limit is too low.
///
/// The spawned server inherits the raised limit, which matters because it holds one descriptor per connection too.
pub(crate) fn raise_nofile(wanted: u64) {
    match rlimit::increase_nofile_limit(wanted) {
        Ok(got) if got >= wanted => {}
        Ok(got) => println!(
            "warning: RLIMIT_NOFILE is {got}, below the {wanted} this run needs; raise it with `ulimit -n {wanted}` (as root) first"
        ),
        Err(err) => {
            println!("warning: could not raise RLIMIT_NOFILE ({err}); use `ulimit -n {wanted}`")
        }
    }
}

/// A short random tag that keeps the logins of one run apart from those of earlier runs on the same data dir.
pub(crate) fn run_tag() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS per process, so hashing the clock with it gives a fresh value per run
    // without pulling in a random-number crate.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(stats::unix_micros() as u128);
    hasher.write_u32(std::process::id());
    format!("{:08x}", hasher.finish() as u32)
}
