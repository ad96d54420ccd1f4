//! Admin commands on two nodes sharing MariaDB, Redis and a real Kafka broker: both nodes consume the command
//! topic in one group, and whichever node runs a command, a client on the other node sees its effect; a
//! duplicate runs once. Each test has its own databases, Redis keys, Kafka topics and consumer group.
//! `PALAVER_SKIP_KAFKA=1` skips it with a notice when no broker runs.

mod common;

use common::Client;
use palaver_core::ports::{QueueTopic, TaskQueue};
use palaver_server::wiring;
use palaver_service::admin::AdminCommand;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.into())
}

async fn node(dir: &std::path::Path, tag: &str, id: &str) -> wiring::Node {
    let mysql = env_or("PALAVER_TEST_MYSQL_ADDR", "127.0.0.1:3306");
    let redis = env_or("PALAVER_TEST_REDIS_ADDR", "127.0.0.1:6379");
    let brokers = env_or("PALAVER_TEST_KAFKA_BROKERS", "127.0.0.1:9092");
    let url = format!("mysql://palaver:palaver@{mysql}/{tag}_ctl");
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let prefix = format!("{tag}_t_");
    let topics = format!(
        "{{ admin_command = \"{tag}.cmd\", admin_result = \"{tag}.res\", admin_event = \"{tag}.evt\", audit = \
         \"{tag}.audit\", push = \"{tag}.push\", file_security = \"{tag}.file\", dead_letter = \"{tag}.dlq\" }}"
    );
    let cfg = common::config(
        dir,
        &[
            ("PALAVER_STORE__KIND", "mysql"),
            ("PALAVER_STORE__URL", &url),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", &prefix),
            ("PALAVER_STORE_CONFIG__REDIS", &redis_cfg),
            ("PALAVER_SERVER__NODE_ID", id),
            ("PALAVER_AUTH__TOKEN_KEY", "YWRtaW4tY2x1c3Rlci10ZXN0LWtleS0wMTIzNDU2Nzg5YWJjZGVm"),
            ("PALAVER_KAFKA__BROKERS", &brokers),
            ("PALAVER_KAFKA__GROUP_ID", tag),
            ("PALAVER_KAFKA__PARTITIONS", "2"),
            ("PALAVER_KAFKA__TOPICS", &topics),
            ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
        ],
    );
    wiring::start(cfg).await.expect("the node starts (are MariaDB, Redis and Kafka running?)")
}

/// Drops the test's databases and Redis keys when it ends, however it ends (best effort; its Kafka topics stay,
/// named after the tag).
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        use std::process::Command;
        let m: std::net::SocketAddr = env_or("PALAVER_TEST_MYSQL_ADDR", "127.0.0.1:3306").parse().unwrap();
        let (host, port) = (m.ip().to_string(), m.port().to_string());
        let mysql = |args: &[&str], sql: String| {
            Command::new("mysql")
                .args(["-h", &host, "-P", &port, "-upalaver", "-ppalaver"])
                .args(args)
                .arg(sql)
                .output()
        };
        if let Ok(out) = mysql(&["-N", "-e"], format!("SHOW DATABASES LIKE '{}\\_%'", self.0)) {
            let sql: String = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.starts_with(&self.0))
                .map(|db| format!("DROP DATABASE IF EXISTS `{db}`;"))
                .collect();
            if !sql.is_empty() {
                let _ = mysql(&["-e"], sql);
            }
        }
        let redis = format!("redis://{}", env_or("PALAVER_TEST_REDIS_ADDR", "127.0.0.1:6379"));
        if let Ok(mut conn) = redis::Client::open(redis).and_then(|c| c.get_connection())
            && let Ok(keys) = redis::cmd("KEYS").arg(format!("{}:*", self.0)).query::<Vec<String>>(&mut conn)
            && !keys.is_empty()
        {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&keys).query(&mut conn);
        }
    }
}

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
    let a = node(da.path(), &tag, &format!("{tag}-a")).await;
    let b = node(db.path(), &tag, &format!("{tag}-b")).await;
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
