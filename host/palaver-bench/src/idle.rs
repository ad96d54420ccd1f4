//! `idle`: open N WebSocket connections that each send {hi} and then stay idle; measure accept rate and RSS.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;

use crate::client::{self, Conn};
use crate::park::{Parked, Parking};
use crate::stats::{Anomalies, JsonLine, round3};
use crate::target::{Target, TargetArgs, own_cpu_secs, rss_kib};

/// The goal printed beside the per-connection memory figure.
const TARGET_KIB_PER_CONN: f64 = 16.0;

/// Options of the idle-connection test.
#[derive(Args, Debug)]
pub(crate) struct IdleArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Number of connections to open and hold.
    #[arg(long, default_value_t = 10_000)]
    conns: usize,
    /// Connections being opened at the same time.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Seconds to hold all connections idle before measuring RSS; they keep answering pings meanwhile.
    #[arg(long, default_value_t = 5)]
    hold_secs: u64,
    /// Rounds of open, hold and close on the same server, to tell a leak from memory the allocator keeps.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Client read buffer per connection in bytes; the client must stay light.
    #[arg(long, default_value_t = 4096)]
    read_buffer: usize,
}

/// Runs the idle test and prints its figures.
pub(crate) async fn run(args: IdleArgs) -> Result<()> {
    crate::raise_nofile(args.conns as u64 + 256);
    let target = Target::open(&args.target).await?;
    // Let the freshly started server settle so the baseline does not include lazy start-up allocations.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = target.rss_kib();
    println!(
        "idle: {} round(s) of {} connections ({} at a time), each sends {{hi}} and stays idle; client read buffer {} B",
        args.rounds, args.conns, args.concurrency, args.read_buffer
    );
    let mut first_peak = None;
    for round in 1..=args.rounds.max(1) {
        let peak = one_round(&target, &args, round, baseline).await?;
        // The same load held again should need the same memory; growth from round to round points at a leak
        // rather than at an allocator that keeps freed pages.
        match (first_peak, peak) {
            (None, _) => first_peak = peak,
            (Some(first), Some(now)) if now as f64 > first as f64 * 1.1 => println!(
                "PROBLEM: round {round} peaked at {now} KiB, more than 10 % above round 1 ({first} KiB): memory grows per round"
            ),
            _ => {}
        }
    }
    target.finish();
    Ok(())
}

/// Opens, holds and closes one round of connections; returns the server RSS while they were held.
async fn one_round(target: &Target, args: &IdleArgs, round: u32, baseline: Option<u64>) -> Result<Option<u64>> {
    let server_cpu_before = target.cpu_secs();
    let client_cpu_before = own_cpu_secs();
    // Held connections are parked: each keeps reading so it answers the server's pings, as an idle client would.
    let parking = Parking::new();
    let start = Instant::now();
    let results = client::bounded("connected", args.conns, args.concurrency, |_| {
        let parking = &parking;
        async move { Ok(parking.park(open_one(target, args.read_buffer).await?)) }
    })
    .await;
    let open_secs = start.elapsed().as_secs_f64();
    let mut held: Vec<Parked> = Vec::with_capacity(results.len());
    let mut failures = Anomalies::default();
    for (i, result) in results {
        match result {
            Ok(ws) => held.push(ws),
            Err(err) => failures.note(format!("connection {i}: {err:#}")),
        }
    }
    let opened = held.len();
    let accept_rate = opened as f64 / open_secs.max(1e-9);
    println!(
        "round {round}: opened {opened}/{} in {open_secs:.2} s: {accept_rate:.0} conn/s (connect + upgrade + hi reply)",
        args.conns
    );
    failures.print("connections failed");

    tokio::time::sleep(Duration::from_secs(args.hold_secs)).await;
    let rss_held = target.rss_kib();
    let (still_open, dropped) = parking.release(held, "connection").await;
    let alive = still_open.len();
    println!("  held {alive}/{opened} connections after {} s idle", args.hold_secs);
    if alive < opened {
        println!("PROBLEM: the server dropped {} idle connections within {} s", opened - alive, args.hold_secs);
        dropped.print("idle connections closed by the server");
    }

    let mut out = JsonLine::new("idle");
    out.set("round", round);
    out.set("conns", args.conns);
    out.set("opened", opened);
    out.set("held", alive);
    out.set("failed", failures.count);
    out.set("accept_conn_per_s", accept_rate.round());
    out.set("open_s", round3(open_secs));
    match (baseline, rss_held) {
        (Some(before), Some(after)) => {
            let per_conn = after.saturating_sub(before) as f64 / alive.max(1) as f64;
            let verdict = if per_conn <= TARGET_KIB_PER_CONN { "meets" } else { "MISSES" };
            println!(
                "  server RSS {before} KiB at start, {after} KiB with {alive} idle: {per_conn:.2} KiB per connection \
                 (target ≤ {TARGET_KIB_PER_CONN} KiB at 10k: {verdict}; kernel socket memory is not in RSS)"
            );
            out.set("server_rss_start_kib", before);
            out.set("server_rss_held_kib", after);
            out.set("kib_per_conn", round3(per_conn));
        }
        _ => println!("  server RSS unknown: pass --spawn, or --pid of the running server"),
    }
    if let Some(kib) = rss_kib(std::process::id()) {
        println!("  bench client RSS {kib} KiB (client and server share this 2-core machine)");
        out.set("client_rss_kib", kib);
    }
    if let (Some(before), Some(after)) = (server_cpu_before, target.cpu_secs()) {
        let client = own_cpu_secs() - client_cpu_before;
        println!("  CPU during the round: server {:.2} s, client {client:.2} s", after - before);
        out.set("server_cpu_s", round3(after - before));
        out.set("client_cpu_s", round3(client));
    }

    // Closing and then sampling again shows whether the server gives the per-connection memory back.
    drop(still_open);
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some(released) = target.rss_kib() {
        println!("  server RSS {released} KiB 2 s after all connections closed");
        out.set("server_rss_closed_kib", released);
    }
    println!("{out}");
    Ok(rss_held)
}

/// Connects and waits for the `{hi}` reply.
async fn open_one(target: &Target, read_buffer: usize) -> Result<Conn> {
    let mut conn = Conn::new(client::connect(target, read_buffer).await?);
    conn.hi().await?;
    Ok(conn)
}
