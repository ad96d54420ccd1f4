//! Admin commands on two nodes sharing MariaDB, Redis and a real Kafka broker: both nodes consume the command
//! topic in one group, and whichever node runs a command, a client on the other node sees its effect; a
//! duplicate runs once. Each test has its own databases, Redis keys, Kafka topics and consumer group.
//! `PALAVER_SKIP_KAFKA=1` skips it with a notice when no broker runs.

mod common;

use common::Client;
use common::cluster::{Cleanup, node};
use palaver_core::ports::{QueueTopic, TaskQueue};
use palaver_service::admin::AdminCommand;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

async fn wait_for(c: &mut Client, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if let Some(f) = c.next().await
            && pred(&f)
        {
            return f;
        }
    }
    panic!("no {what}");
}

async fn send(queue: &Arc<dyn TaskQueue>, id: &str, kind: &str, payload: Value) {
    let cmd = AdminCommand {
        command_id: id.into(),
        tenant_id: Some("1".into()),
        kind: kind.into(),
        payload,
        ..AdminCommand::default()
    };
    queue.produce(cmd.record()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_run_by_either_node_reaches_a_client_on_the_other() {
    if std::env::var("PALAVER_SKIP_KAFKA").is_ok_and(|v| v == "1") {
        eprintln!("notice: PALAVER_SKIP_KAFKA=1, skipping a Kafka test");
        return;
    }
    let tag = format!("pac_{:08x}", rand::random::<u32>());
    let _cleanup = Cleanup(tag.clone());
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node(da.path(), &tag, &format!("{tag}-a"), &[]).await;
    let b = node(db.path(), &tag, &format!("{tag}-b"), &[]).await;
    let queue = a.queue();
    let mut results = queue.subscribe(QueueTopic::AdminResult, &format!("{tag}.test")).await.unwrap();
    let mut seen: Vec<Value> = Vec::new();
    let mut result = async |id: &str, n: usize| -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let have: Vec<&Value> = seen.iter().filter(|r| r["command_id"] == id).collect();
            if have.len() >= n {
                return have[n - 1].clone();
            }
            let d = tokio::time::timeout_at(deadline, results.next()).await.expect("a result in time").unwrap();
            seen.push(serde_json::from_slice(&d.record.payload).unwrap());
        }
    };

    let mut owner = Client::connect(a.addr()).await;
    owner.signup(&format!("{tag}o")).await;
    let grp = owner.req("sub", json!({ "topic": "new", "set": { "desc": { "public": { "fn": "t" } } } })).await;
    let grp = grp["topic"].as_str().unwrap().to_owned();
    let mut ann = Client::connect(b.addr()).await;
    let (ann_id, _) = ann.signup(&format!("{tag}a")).await;
    ann.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ann.req("sub", json!({ "topic": grp })).await["code"], 200);
    let mut bob = Client::connect(b.addr()).await;
    let (bob_id, _) = bob.signup(&format!("{tag}b")).await;

    // A mute, twice under one id: once in effect, one result republished, the publish on node B refused.
    let mute = json!({ "topic": grp, "user": ann_id, "duration_ms": 600_000 });
    send(&queue, "m1", "group.member.mute", mute.clone()).await;
    send(&queue, "m1", "group.member.mute", mute).await;
    let (first, second) = (result("m1", 1).await, result("m1", 2).await);
    assert_eq!(first["status"], "succeeded", "{first}");
    assert_eq!(first, second, "the repeat republishes the stored result");
    wait_for(&mut ann, "the mute event", |f| f["info"]["event"] == "group.mute.updated").await;
    let refused = ann.req("pub", json!({ "topic": grp, "content": "x" })).await;
    assert_eq!((refused["code"].clone(), refused["text"].clone()), (json!(403), json!("GROUP_MUTED")));

    // A disable closes the session on node B wherever it ran.
    send(&queue, "d1", "user.disable", json!({ "user": bob_id })).await;
    assert_eq!(result("d1", 1).await["status"], "succeeded");
    wait_for(&mut bob, "the eviction", |f| f["ctrl"]["code"] == 205).await;

    // The group goes for every member on every node.
    send(&queue, "g1", "group.delete", json!({ "topic": grp })).await;
    assert_eq!(result("g1", 1).await["status"], "succeeded");
    wait_for(&mut ann, "pres gone", |f| f["pres"]["what"] == "gone" && f["pres"]["src"] == grp.as_str()).await;
    let ran_on: Vec<Value> = ["m1", "d1", "g1"].iter().map(|id| json!(id)).collect();
    let mut nodes = Vec::new();
    for id in ran_on {
        nodes.push(result(id.as_str().unwrap(), 1).await["node"].clone());
    }
    eprintln!("commands ran on {nodes:?}");
    b.shutdown().await;
    a.shutdown().await;
}
