//! `fanout`: one publisher and M members in one group; deliveries/s, publish→receive latency and loss.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;

use crate::client::{self, Conn, PASSWORD, Ws};
use crate::fanout_run::RunCtx;
use crate::members::MemberSet;
use crate::park::Parking;
use crate::stats::Anomalies;
use crate::target::{Target, TargetArgs};

/// The goals printed beside the figures.
const TARGET_DELIVERIES_PER_S: f64 = 50_000.0;
const TARGET_P99_MS: f64 = 50.0;

/// Options of the group fanout test.
#[derive(Args, Debug)]
pub(crate) struct FanoutArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Members that join the group and receive every message.
    #[arg(long, default_value_t = 1000)]
    pub(crate) members: usize,
    /// Messages the publisher sends per run.
    #[arg(long, default_value_t = 500)]
    pub(crate) messages: u64,
    /// Messages per second; 0 publishes as fast as the window of unacknowledged publishes allows.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) rate: f64,
    /// Publishes that may await their ctrl 202 at once.
    #[arg(long, default_value_t = 16)]
    pub(crate) window: usize,
    /// Run at the maximum rate first, then again at half the measured rate, and judge the half-rate latency.
    #[arg(long)]
    pub(crate) find_max: bool,
    /// Sign-ups in flight during setup (each costs the server a password hash).
    #[arg(long, default_value_t = 8)]
    pub(crate) setup_concurrency: usize,
    /// Tasks that read the member sockets; each multiplexes its share.
    #[arg(long, default_value_t = 2)]
    pub(crate) readers: usize,
    /// Seconds to wait for outstanding deliveries after the last publish.
    #[arg(long, default_value_t = 10)]
    pub(crate) drain_secs: u64,
    /// Client read buffer per member socket in bytes.
    #[arg(long, default_value_t = 16 * 1024)]
    pub(crate) read_buffer: usize,
    /// Servers to spawn (with `--spawn` and a scale-out `--config` they share); members are spread round-robin
    /// over them and the publisher is on the first.
    #[arg(long, default_value_t = 1)]
    pub(crate) nodes: usize,
    /// A Redis to read `total_commands_processed` from, to print Redis commands per delivered message.
    #[arg(long)]
    pub(crate) redis_addr: Option<std::net::SocketAddr>,
}

/// Sets up the group, runs the requested load and prints the figures.
pub(crate) async fn run(args: FanoutArgs) -> Result<()> {
    crate::raise_nofile(args.members as u64 + 256);
    let targets = Target::open_nodes(&args.target, args.nodes).await?;
    println!(
        "fanout: 1 publisher + {} members in one group on {} node(s); client and server share this 2-core \
         machine, so the figures are a ceiling for the whole box, not for the server alone",
        args.members,
        targets.len()
    );
    let setup_start = Instant::now();
    let (mut publisher, topic, sockets) = setup(&targets, &args).await?;
    let setup_secs = setup_start.elapsed().as_secs_f64();
    let joined = sockets.len();
    println!(
        "setup: {joined}/{} members signed up and subscribed in {setup_secs:.1} s ({:.1} per second, {} at a time; \
         each sign-up costs the server an argon2 hash)",
        args.members,
        joined as f64 / setup_secs.max(1e-9),
        args.setup_concurrency
    );
    if joined == 0 {
        bail!("no member joined the group");
    }
    let mut sets = MemberSet::split(sockets, args.readers);
    let ctx = RunCtx { args: &args, topic: &topic, setup_secs };

    if args.find_max {
        let max = ctx.run_once(&targets, &mut publisher, &mut sets, 1, 0.0).await?;
        let half_rate = (max.msg_per_s / 2.0).max(1.0);
        println!(
            "find-max: maximum {:.0} deliveries/s; running again at half: {half_rate:.1} msg/s",
            max.deliveries_per_s
        );
        let half = ctx.run_once(&targets, &mut publisher, &mut sets, 2, half_rate).await?;
        let throughput_ok = max.deliveries_per_s >= TARGET_DELIVERIES_PER_S;
        let latency_ok = half.p99_ms <= TARGET_P99_MS;
        println!(
            "verdict: max {:.0} deliveries/s (target ≥ {TARGET_DELIVERIES_PER_S:.0}: {}); p99 {:.3} ms at half rate \
             (target ≤ {TARGET_P99_MS} ms: {})",
            max.deliveries_per_s,
            if throughput_ok { "meets" } else { "MISSES" },
            half.p99_ms,
            if latency_ok { "meets" } else { "MISSES" }
        );
    } else {
        ctx.run_once(&targets, &mut publisher, &mut sets, 1, args.rate).await?;
    }
    drop(sets);
    for target in targets {
        target.finish();
    }
    Ok(())
}

/// Creates the publisher and the group, then signs up and subscribes the members.
///
/// Every finished session is parked until all have joined, so none is dropped for not answering pings.
async fn setup(targets: &[Target], args: &FanoutArgs) -> Result<(Conn, String, Vec<Ws>)> {
    let tag = crate::run_tag();
    let (publisher, topic) = setup_publisher(&targets[0], &tag).await?;
    println!("publisher {} created {topic}", publisher.user);
    let parking = Parking::new();
    let parked_publisher = parking.park(publisher);
    let results = client::bounded("members joined", args.members, args.setup_concurrency, |i| {
        let (parking, topic) = (&parking, topic.as_str());
        let login = format!("b{tag}m{i}");
        let target = &targets[i % targets.len()];
        async move { Ok(parking.park(join_member(target, args.read_buffer, login, topic).await?)) }
    })
    .await;
    let mut parked = Vec::with_capacity(args.members);
    let mut failures = Anomalies::default();
    for (i, result) in results {
        match result {
            Ok(one) => parked.push(one),
            Err(err) => failures.note(format!("member {i}: {err:#}")),
        }
    }
    failures.print("members failed to join");
    let (mut publisher, dropped) = parking.release(vec![parked_publisher], "publisher").await;
    let Some(publisher) = publisher.pop() else {
        dropped.print("publisher problems");
        bail!("the server closed the publisher's connection during setup");
    };
    let (members, dropped) = parking.release(parked, "member").await;
    dropped.print("members closed by the server while waiting for setup to finish");
    Ok((publisher, topic, members.into_iter().map(|conn| conn.ws).collect()))
}

/// Signs the publisher up, logs in again on a fresh connection and creates the group.
///
/// The second connection exercises `{login}` as well as `{acc}`, which every other session skips.
async fn setup_publisher(target: &Target, tag: &str) -> Result<(Conn, String)> {
    let login = format!("b{tag}p");
    let signed_up = client::new_user(target, 64 * 1024, &login, "bench publisher").await?;
    let user = signed_up.user.clone();
    drop(signed_up);
    let mut publisher = Conn::new(client::connect(target, 64 * 1024).await?);
    publisher.hi().await?;
    publisher.login(&login, PASSWORD).await.context("logging the publisher in")?;
    if publisher.user != user {
        println!("PROBLEM: login returned {} but sign-up returned {user} for the same login", publisher.user);
    }
    let reply = publisher.sub("new", Some(json!({"desc": {"public": {"fn": "bench"}}}))).await?;
    match reply.topic {
        Some(topic) if topic.starts_with("grp") => Ok((publisher, topic)),
        _ => bail!("the ctrl for {{sub topic:\"new\"}} named no grp topic: {}", reply.raw),
    }
}

/// Signs a member up and subscribes it to the group.
async fn join_member(target: &Target, read_buffer: usize, login: String, topic: &str) -> Result<Conn> {
    let mut conn = client::new_user(target, read_buffer, &login, "bench member").await?;
    conn.sub(topic, None).await?;
    Ok(conn)
}
