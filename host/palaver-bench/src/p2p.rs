//! `p2p`: pairs of users talk over P2P topics; one side pings, the other echoes, and the round trip is timed.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::client::{self, Conn};
use crate::frames::{self, Stamp};
use crate::park::Parking;
use crate::stats::{Anomalies, JsonLine, Samples, round3, unix_micros};
use crate::target::{RATE_LIMIT_HINT, Target, TargetArgs, own_cpu_secs};

/// Options of the P2P round-trip test.
#[derive(Args, Debug)]
pub(crate) struct P2pArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Pairs of users, each pair on its own P2P topic.
    #[arg(long, default_value_t = 10)]
    pairs: usize,
    /// Pings per pair; each waits for its echo before the next is sent.
    #[arg(long, default_value_t = 1000)]
    messages: u64,
    /// Sign-ups in flight during setup (each costs the server a password hash).
    #[arg(long, default_value_t = 8)]
    setup_concurrency: usize,
    /// Milliseconds one ping may wait for its echo before the pair gives up.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
}

/// What one pair measured.
#[derive(Default)]
struct PairResult {
    rtt: Samples,
    completed: u64,
    anomalies: Anomalies,
    errors: Vec<String>,
}

/// Sets the pairs up, runs the ping-pong and prints the figures.
pub(crate) async fn run(args: P2pArgs) -> Result<()> {
    crate::raise_nofile(args.pairs as u64 * 2 + 256);
    let target = Target::open(&args.target).await?;
    println!(
        "p2p: {} pairs × {} pings, one in flight per pair; client and server share this 2-core machine",
        args.pairs, args.messages
    );
    let tag = crate::run_tag();
    let setup_start = Instant::now();
    // Ready pairs are parked so that they keep answering pings while later pairs sign up.
    let parking = Parking::new();
    let results = client::bounded("pairs ready", args.pairs, args.setup_concurrency, |i| {
        let (parking, target, tag) = (&parking, &target, &tag);
        async move {
            let (pinger, echoer) = make_pair(target, tag, i).await?;
            Ok([parking.park(pinger), parking.park(echoer)])
        }
    })
    .await;
    let mut pairs = Vec::with_capacity(args.pairs);
    let mut failures = Anomalies::default();
    for (i, result) in results {
        let parked = match result {
            Ok(parked) => parked,
            Err(err) => {
                failures.note(format!("pair {i}: {err:#}"));
                continue;
            }
        };
        let (conns, dropped) = parking.release(parked.into(), "pair member").await;
        failures.merge(dropped);
        let mut conns = conns.into_iter();
        if let (Some(pinger), Some(echoer)) = (conns.next(), conns.next()) {
            pairs.push((pinger, echoer));
        }
    }
    let setup_secs = setup_start.elapsed().as_secs_f64();
    println!("setup: {}/{} pairs signed up and subscribed in {setup_secs:.1} s", pairs.len(), args.pairs);
    failures.print("pairs failed to set up");
    if pairs.is_empty() {
        bail!("no pair could be set up");
    }

    let server_cpu = target.cpu_secs();
    let client_cpu = own_cpu_secs();
    let timeout = Duration::from_millis(args.timeout_ms);
    let start = Instant::now();
    let tasks: Vec<_> = pairs
        .into_iter()
        .map(|(pinger, echoer)| tokio::spawn(ping_pong(pinger, echoer, args.messages, timeout)))
        .collect();
    let pair_count = tasks.len();
    let mut total = PairResult::default();
    for task in tasks {
        // Each pair is bounded by its per-ping timeout, so joining needs no extra deadline.
        let mut part = task.await.context("a pair task panicked")?;
        total.rtt.append(&mut part.rtt);
        total.completed += part.completed;
        total.anomalies.merge(part.anomalies);
        for err in part.errors {
            total.anomalies.note(format!("pair stopped: {err}"));
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let server_cpu = target.cpu_secs().zip(server_cpu).map(|(after, before)| after - before);
    let client_cpu = own_cpu_secs() - client_cpu;

    let expected = pair_count as u64 * args.messages;
    let per_s = total.completed as f64 / wall.max(1e-9);
    let rtt = total.rtt.summary();
    println!("completed {}/{expected} round trips in {wall:.2} s: {per_s:.0} round trips/s", total.completed);
    println!("  round trip (pub → peer's {{data}} → echo pub → {{data}}): {}", rtt.line());
    let server = server_cpu.map_or(String::from("unknown (no pid)"), |s| format!("{s:.2} s"));
    println!("  CPU: server {server}, client {client_cpu:.2} s");
    total.anomalies.print("problems during the ping-pong");
    target.finish();

    let mut out = JsonLine::new("p2p");
    out.set("pairs", pair_count);
    out.set("messages", args.messages);
    out.set("round_trips", total.completed);
    out.set("expected", expected);
    out.set("round_trips_per_s", per_s.round());
    out.set("wall_s", round3(wall));
    out.set("setup_s", round3(setup_secs));
    out.set("client_cpu_s", round3(client_cpu));
    rtt.put(&mut out, "");
    if let Some(s) = server_cpu {
        out.set("server_cpu_s", round3(s));
    }
    println!("{out}");
    Ok(())
}

/// Signs up two users and subscribes each to the other's `usr…`, which opens their P2P topic.
async fn make_pair(target: &Target, tag: &str, i: usize) -> Result<(Conn, Conn)> {
    let mut pinger = client::new_user(target, 8 * 1024, &format!("b{tag}a{i}"), "bench pinger").await?;
    let mut echoer = client::new_user(target, 8 * 1024, &format!("b{tag}e{i}"), "bench echoer").await?;
    // A P2P topic is addressed by the peer's user id, so each side subscribes to the other's `usr…`.
    let to_echoer = echoer.user.clone();
    let to_pinger = pinger.user.clone();
    pinger.sub(&to_echoer, None).await.context("pinger subscribing to the echoer")?;
    echoer.sub(&to_pinger, None).await.context("echoer subscribing to the pinger")?;
    Ok((pinger, echoer))
}

/// Runs both sides of one pair on one task and collects the round trips.
async fn ping_pong(mut pinger: Conn, mut echoer: Conn, messages: u64, timeout: Duration) -> PairResult {
    let mut result = PairResult::default();
    let mut echo_anomalies = Anomalies::default();
    let pinger_user = pinger.user.clone();
    let echoer_user = echoer.user.clone();
    let (pinged, echoed) = tokio::join!(
        ping(&mut pinger, &echoer_user, messages, timeout, &mut result),
        echo(&mut echoer, &pinger_user, messages, timeout, &mut echo_anomalies),
    );
    result.anomalies.merge(echo_anomalies);
    // Both sides are reported: the echoer's refusal is usually the cause of the pinger's timeout.
    for (side, outcome) in [("pinger", pinged), ("echoer", echoed)] {
        if let Err(err) = outcome {
            result.errors.push(format!("{side}: {err:#}"));
        }
    }
    result
}

/// Sends `messages` pings to `peer`, each after the previous one's echo arrived.
async fn ping(conn: &mut Conn, peer: &str, messages: u64, timeout: Duration, result: &mut PairResult) -> Result<()> {
    let me = conn.user.clone();
    for i in 0..messages {
        let t = unix_micros();
        conn.send_text(frames::pub_text(&format!("q{i}"), peer, Stamp { t, i, r: 1 })).await?;
        let deadline = Instant::now() + timeout;
        loop {
            let text = conn.next_text(deadline).await.with_context(|| format!("waiting for the echo of ping {i}"))?;
            let Some(frame) = frames::parse(&text) else {
                result.anomalies.note(format!("unparsable frame to the pinger: {text}"));
                continue;
            };
            if let Some(ctrl) = frame.ctrl {
                if ctrl.code == 429 {
                    bail!("ping {i} was answered with {text}: {RATE_LIMIT_HINT}");
                }
                if !(200..300).contains(&ctrl.code) {
                    bail!("ping {i} was answered with {text}");
                }
                continue;
            }
            let Some(data) = frame.data else { continue };
            if data.from.as_deref() == Some(me.as_str()) {
                result.anomalies.note(format!("own ping echoed despite noecho:true: {text}"));
                continue;
            }
            match data.content {
                Some(stamp) if stamp.i == i => {
                    result.rtt.push(unix_micros() as i64 - stamp.t as i64);
                    result.completed += 1;
                    break;
                }
                _ => result.anomalies.note(format!("unexpected data while waiting for echo {i}: {text}")),
            }
        }
    }
    Ok(())
}

/// Echoes every ping from `peer` back with the same stamp, until `messages` were echoed.
async fn echo(conn: &mut Conn, peer: &str, messages: u64, timeout: Duration, anomalies: &mut Anomalies) -> Result<()> {
    let me = conn.user.clone();
    let mut echoed = 0;
    while echoed < messages {
        let text = conn.next_text(Instant::now() + timeout).await.context("waiting for a ping")?;
        let Some(frame) = frames::parse(&text) else {
            anomalies.note(format!("unparsable frame to the echoer: {text}"));
            continue;
        };
        if let Some(ctrl) = frame.ctrl {
            if ctrl.code == 429 {
                bail!("an echo was answered with {text}: {RATE_LIMIT_HINT}");
            }
            if !(200..300).contains(&ctrl.code) {
                bail!("an echo was answered with {text}");
            }
            continue;
        }
        let Some(data) = frame.data else { continue };
        match (data.from.as_deref(), data.content) {
            (Some(from), _) if from == me => anomalies.note(format!("own echo delivered despite noecho:true: {text}")),
            (_, Some(stamp)) => {
                conn.send_text(frames::pub_text(&format!("e{}", stamp.i), peer, stamp)).await?;
                echoed += 1;
            }
            (_, None) => anomalies.note(format!("data without a bench stamp: {text}")),
        }
    }
    Ok(())
}
