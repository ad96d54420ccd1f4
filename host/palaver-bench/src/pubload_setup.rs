//! Setup of the `publish` load: T groups, each with one owner and P − 1 joined publishers, all signed up fresh.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::client::{self, Conn};
use crate::park::{Parked, Parking};
use crate::stats::Anomalies;
use crate::target::Target;

/// The mode a write-only publisher wants: join, write and presence, but no R, so nothing is delivered to it.
const JOINER_WRITE_ONLY: &str = "JWP";
/// The owner's full mode without R; the owner keeps O, so it still owns the group.
const OWNER_WRITE_ONLY: &str = "JWPASDO";

/// The shape of the setup.
pub(crate) struct Shape {
    pub(crate) topics: usize,
    pub(crate) publishers_per_topic: usize,
    /// Sign-ups in flight at once; each costs the server an argon2 hash.
    pub(crate) concurrency: usize,
    /// Publishers keep R, so each message also reaches the topic's other publishers.
    pub(crate) peers_read: bool,
    /// Every group also gets a member with R, P and a device token who is offline during the load.
    pub(crate) offline_readers: bool,
}

/// One ready publisher and the group it publishes to.
pub(crate) struct Publisher {
    pub(crate) conn: Conn,
    pub(crate) topic: String,
}

/// Signs up every publisher and builds the groups; sessions that finish early are parked so they keep
/// answering the server's pings while the rest sign up.
pub(crate) async fn setup(target: &Target, shape: &Shape) -> Result<Vec<Publisher>> {
    let tag = crate::run_tag();
    let start = Instant::now();
    let parking = Parking::new();
    let mut failures = Anomalies::default();

    let owners = client::bounded("groups created", shape.topics, shape.concurrency, |t| {
        let (parking, tag) = (&parking, &tag);
        async move {
            let (conn, topic) = make_owner(target, &format!("b{tag}t{t}p0"), shape.peers_read).await?;
            Ok((parking.park(conn), topic))
        }
    })
    .await;
    let mut topics = vec![None::<String>; shape.topics];
    let mut parked: Vec<(Parked, usize)> = Vec::new();
    for (t, result) in owners {
        match result {
            Ok((one, topic)) => {
                topics[t] = Some(topic);
                parked.push((one, t));
            }
            Err(err) => failures.note(format!("owner of topic {t}: {err:#}")),
        }
    }
    println!("  {} groups created after {:.1} s", parked.len(), start.elapsed().as_secs_f64());
    if shape.offline_readers {
        let made: Vec<String> = topics.iter().flatten().cloned().collect();
        let readers = client::bounded("offline readers", made.len(), shape.concurrency, |i| {
            let login = format!("b{tag}t{i}r");
            let topic = made[i].clone();
            async move { offline_reader(target, &login, &topic).await }
        })
        .await;
        for (i, result) in readers {
            if let Err(err) = result {
                failures.note(format!("offline reader {i}: {err:#}"));
            }
        }
    }

    let joiners_per_topic = shape.publishers_per_topic.saturating_sub(1);
    let ready: Vec<usize> = (0..shape.topics).filter(|&t| topics[t].is_some()).collect();
    let joins = client::bounded("publishers joined", ready.len() * joiners_per_topic, shape.concurrency, |i| {
        let (parking, tag) = (&parking, &tag);
        let t = ready[i / joiners_per_topic.max(1)];
        let topic = topics[t].clone().unwrap_or_default();
        let login = format!("b{tag}t{t}p{}", i % joiners_per_topic.max(1) + 1);
        async move { Ok((parking.park(join(target, &login, &topic, shape.peers_read).await?), t)) }
    })
    .await;
    for (i, result) in joins {
        match result {
            Ok(one) => parked.push(one),
            Err(err) => failures.note(format!("joiner {i}: {err:#}")),
        }
    }
    failures.print("publishers failed to set up");

    let (parked, order): (Vec<Parked>, Vec<usize>) = parked.into_iter().unzip();
    let (conns, dropped) = parking.release(parked, "publisher").await;
    dropped.print("publishers closed by the server while waiting for setup to finish");
    // Release leaves out the sessions that dropped, which would misalign sessions and topics; none may drop.
    if conns.len() != order.len() {
        bail!("{} of {} publishers were closed during setup", order.len() - conns.len(), order.len());
    }
    let publishers = conns
        .into_iter()
        .zip(order)
        .map(|(conn, t)| Publisher { conn, topic: topics[t].clone().unwrap_or_default() })
        .collect();
    Ok(publishers)
}

/// Signs the owner up and creates its group; a write-only owner then re-attaches without R.
async fn make_owner(target: &Target, login: &str, peers_read: bool) -> Result<(Conn, String)> {
    let mut conn = client::new_user(target, 64 * 1024, login, "bench owner").await?;
    let reply = conn.sub("new", Some(json!({"desc": {"public": {"fn": "bench publish"}}}))).await?;
    let topic = match reply.topic {
        Some(topic) if topic.starts_with("grp") => topic,
        _ => bail!("the ctrl for {{sub topic:\"new\"}} named no grp topic: {}", reply.raw),
    };
    if !peers_read {
        // The creator's subscription is fixed at full access; detaching and subscribing again with a narrower
        // want is how a Tinode client changes its own mode on attach.
        conn.request_ok("leave", json!({"topic": topic})).await.context("owner leaving to drop R")?;
        let set = json!({"sub": {"mode": OWNER_WRITE_ONLY}});
        let reply = conn.sub(&topic, Some(set)).await.context("owner re-attaching without R")?;
        check_no_read(&reply.params, &reply.raw)?;
    }
    Ok((conn, topic))
}

/// Signs a publisher up and subscribes it to `topic`, without R unless `peers_read`.
async fn join(target: &Target, login: &str, topic: &str, peers_read: bool) -> Result<Conn> {
    let mut conn = client::new_user(target, 64 * 1024, login, "bench publisher").await?;
    let set = (!peers_read).then(|| json!({"sub": {"mode": JOINER_WRITE_ONLY}}));
    let reply = conn.sub(topic, set).await?;
    if !peers_read {
        check_no_read(&reply.params, &reply.raw)?;
    }
    Ok(conn)
}

/// Signs up a member of `topic` whose `{hi}` registers a device token, joins with the default mode (R and P:
/// a message pushes to it) and disconnects, so that it is offline while the load runs.
async fn offline_reader(target: &Target, login: &str, topic: &str) -> Result<()> {
    let mut conn = Conn::new(client::connect(target, 64 * 1024).await?);
    let hi = json!({"ver": "0.25.3", "ua": "palaver-bench/0.0", "dev": format!("bench-{login}"), "platf": "android"});
    conn.request_ok("hi", hi).await?;
    conn.sign_up(login, client::PASSWORD, "bench reader").await.with_context(|| format!("signing up {login}"))?;
    let reply = conn.sub(topic, None).await?;
    let mode = reply.params.get("acs").and_then(|a| a.get("mode")).and_then(Value::as_str).unwrap_or("");
    if !(mode.contains('R') && mode.contains('P')) {
        bail!("the offline reader's mode lacks R or P, so it would get no push: {}", reply.raw);
    }
    Ok(())
}

/// Fails when the `acs.mode` of a sub reply still contains R, which would turn the run into a fanout test.
fn check_no_read(params: &Value, raw: &str) -> Result<()> {
    match params.get("acs").and_then(|acs| acs.get("mode")).and_then(Value::as_str) {
        Some(mode) if !mode.contains('R') => Ok(()),
        _ => bail!("the server kept R (or named no mode) after asking for a write-only mode: {raw}"),
    }
}
