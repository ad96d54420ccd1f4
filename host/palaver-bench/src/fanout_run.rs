//! One measured fanout run: publish while the member readers count, then print the figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::watch;

use crate::client::Conn;
use crate::fanout::FanoutArgs;
use crate::members::{self, MemberSet, Tally};
use crate::publish::{self, Outcome, Plan};
use crate::stats::{JsonLine, round3};
use crate::target::{RATE_LIMIT_HINT, Target, own_cpu_secs};

/// The figures of one run.
pub(crate) struct RunResult {
    pub(crate) deliveries_per_s: f64,
    pub(crate) msg_per_s: f64,
    pub(crate) p99_ms: f64,
}

/// What every run of one invocation shares.
pub(crate) struct RunCtx<'a> {
    pub(crate) args: &'a FanoutArgs,
    pub(crate) topic: &'a str,
    pub(crate) setup_secs: f64,
}

impl RunCtx<'_> {
    /// Publishes one run while the readers count deliveries, then prints and returns the figures.
    pub(crate) async fn run_once(
        &self,
        targets: &[Target],
        publisher: &mut Conn,
        sets: &mut Vec<MemberSet>,
        run: u32,
        rate: f64,
    ) -> Result<RunResult> {
        let args = self.args;
        let members: usize = sets.iter().map(MemberSet::len).sum();
        let progress = Arc::new(AtomicU64::new(0));
        let (stop, stop_rx) = watch::channel(false);
        let readers: Vec<_> = sets
            .drain(..)
            .map(|set| tokio::spawn(members::read_run(set, run, args.messages, progress.clone(), stop_rx.clone())))
            .collect();
        let server_cpu = total_cpu(targets);
        let client_cpu = own_cpu_secs();
        let redis_before = match self.args.redis_addr {
            Some(addr) => redis_commands(addr).await.ok(),
            None => None,
        };

        let plan = Plan {
            topic: self.topic,
            run,
            messages: args.messages,
            rate,
            window: args.window,
            client_mid: None,
            origin: Instant::now(),
        };
        let mut outcome = publish::publish(publisher, &plan).await;
        let expected_sent = members as u64 * outcome.sent;
        let deadline = Instant::now() + Duration::from_secs(args.drain_secs);
        while progress.load(Ordering::Relaxed) < expected_sent && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // A send error only means every reader has already returned, which is what stopping asks for.
        let _ = stop.send(true);
        let mut tally = Tally::default();
        for handle in readers {
            let (set, part) = tokio::time::timeout(Duration::from_secs(10), handle)
                .await
                .context("a member reader did not stop")?
                .context("a member reader panicked")?;
            sets.push(set);
            tally.merge(part);
        }
        let server_cpu = total_cpu(targets).zip(server_cpu).map(|(after, before)| after - before);
        let client_cpu = own_cpu_secs() - client_cpu;
        let redis_delta = match (self.args.redis_addr, redis_before) {
            // The INFO call itself counts one command; it is negligible next to a run's thousands.
            (Some(addr), Some(before)) => redis_commands(addr).await.ok().map(|after| after.saturating_sub(before)),
            _ => None,
        };
        let unique = tally.received - tally.duplicates;
        let sent = outcome.sent;
        let result = self.report(run, rate, members, &mut outcome, &mut tally, server_cpu, client_cpu);
        if let Some(commands) = redis_delta {
            println!(
                "  redis: {commands} commands for {unique} deliveries = {:.4} per delivery, {:.2} per message",
                commands as f64 / unique.max(1) as f64,
                commands as f64 / sent.max(1) as f64
            );
        }
        Ok(result)
    }

    /// Prints the human-readable lines and the JSON line of one run.
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        run: u32,
        rate: f64,
        members: usize,
        outcome: &mut Outcome,
        tally: &mut Tally,
        server_cpu: Option<f64>,
        client_cpu: f64,
    ) -> RunResult {
        let args = self.args;
        let unique = tally.received - tally.duplicates;
        let expected = members as u64 * args.messages;
        let lost = expected.saturating_sub(unique);
        // Deliveries missing for publishes the server acknowledged: unlike a refused publish, this is real loss.
        let lost_acked = (members as u64 * outcome.acked).saturating_sub(unique);
        let wall = match (outcome.first_send, tally.last_rx) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let deliveries_per_s = if wall > 0.0 { unique as f64 / wall } else { 0.0 };
        let msg_per_s = deliveries_per_s / members.max(1) as f64;
        let pub_secs = match (outcome.first_send, outcome.last_send) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let mode = if rate > 0.0 { format!("{rate:.1} msg/s") } else { format!("max, window {}", args.window) };
        // n messages span n - 1 send intervals, which makes the rate of a fixed-rate run come out exact.
        let pub_rate = outcome.sent.saturating_sub(1) as f64 / pub_secs.max(1e-9);
        println!("run {run} ({mode}), {members} members:");
        println!(
            "  published {}/{} (acked {}, rejected {}) in {pub_secs:.2} s = {pub_rate:.1} msg/s",
            outcome.sent, args.messages, outcome.acked, outcome.rejected,
        );
        if rate > 0.0 && pub_rate < rate * 0.95 {
            println!(
                "  note: the window of {} unacknowledged publishes held the rate below the {rate:.1} msg/s asked",
                args.window
            );
        }
        println!(
            "  delivered {unique}/{expected} (lost {lost}, of acknowledged publishes {lost_acked}; duplicates {}, out of order {}, stale {}) in {wall:.2} s: \
             {deliveries_per_s:.0} deliveries/s",
            tally.duplicates, tally.out_of_order, tally.stale
        );
        let latency = tally.latency.summary();
        println!("  publish→receive latency: {}", latency.line());
        let ack = outcome.ack_latency.summary();
        println!("  publish→ctrl 202 latency: {}", ack.line());
        let server = server_cpu.map_or(String::from("unknown (no pid)"), |s| format!("{s:.2} s"));
        println!("  CPU: server {server}, client {client_cpu:.2} s, over {wall:.2} s on 2 shared cores");
        if let Some(why) = &outcome.aborted {
            println!("PROBLEM: the publisher stopped early: {why}");
        }
        if outcome.rate_limited > 0 {
            println!("PROBLEM: {} publishes refused: {RATE_LIMIT_HINT}", outcome.rate_limited);
        }
        if outcome.echoes > 0 {
            println!("PROBLEM: {} {{data}} echoed to the publisher despite noecho:true", outcome.echoes);
        }
        if tally.closed > 0 {
            println!("PROBLEM: {} member sockets closed during the run", tally.closed);
        }
        outcome.anomalies.print("unexpected frames on the publisher");
        tally.anomalies.print("unexpected frames on members");

        let mut out = JsonLine::new("fanout");
        out.set("run", run);
        out.set("members", members);
        out.set("messages", args.messages);
        out.set("rate_msg_per_s", round3(rate));
        out.set("window", args.window);
        out.set("published", outcome.sent);
        out.set("publish_msg_per_s", round3(pub_rate));
        out.set("publish_msg_per_s", round3(pub_rate));
        out.set("acked", outcome.acked);
        out.set("rejected", outcome.rejected);
        out.set("expected", expected);
        out.set("delivered", unique);
        out.set("lost", lost);
        out.set("lost_acked", lost_acked);
        out.set("duplicates", tally.duplicates);
        out.set("out_of_order", tally.out_of_order);
        out.set("deliveries_per_s", deliveries_per_s.round());
        out.set("wall_s", round3(wall));
        out.set("setup_s", round3(self.setup_secs));
        out.set("client_cpu_s", round3(client_cpu));
        latency.put(&mut out, "");
        ack.put(&mut out, "ack_");
        if let Some(s) = server_cpu {
            out.set("server_cpu_s", round3(s));
        }
        println!("{out}");
        RunResult { deliveries_per_s, msg_per_s, p99_ms: latency.p99_ms }
    }
}

/// CPU seconds of every server, when all their PIDs are known.
fn total_cpu(targets: &[Target]) -> Option<f64> {
    targets.iter().map(Target::cpu_secs).sum()
}

/// Redis's `total_commands_processed`, read with a raw `INFO stats` so the tool needs no Redis client.
async fn redis_commands(addr: std::net::SocketAddr) -> Result<u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.context("connecting to Redis")?;
    tcp.write_all(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n").await?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        let n = tokio::time::timeout(Duration::from_secs(2), tcp.read(&mut buf[len..])).await??;
        len += n;
        let text = String::from_utf8_lossy(&buf[..len]);
        // Only a line that has arrived whole: a read may end in the middle of the number.
        if let Some(rest) = text.split("total_commands_processed:").nth(1)
            && let Some((v, _)) = rest.split_once("\r\n")
        {
            return v.trim().parse().context("parsing total_commands_processed");
        }
        anyhow::ensure!(n > 0 && len < buf.len(), "no total_commands_processed in INFO stats");
    }
}
