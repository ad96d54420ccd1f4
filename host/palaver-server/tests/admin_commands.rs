//! Admin commands end to end on one real node with the embedded queue (its own SQLite file, `queue.db`): commands
//! produced to `im.admin.command`, consumed by the node, their effects seen by WebSocket clients, their results
//! relayed from the outbox to `im.admin.command.result`; the HTTP second front and `palaver admin command` on the
//! same code path; abuse reports filed over `/v1/im/reports` and listed for the Admin side; a duplicate runs
//! once, a poison record is dead-lettered and the next command runs; audit rows for every command. A command left
//! in the store's file by an older version runs once after the move to the queue's own file.

mod common;

use common::{Client, KEY, http_with};
use palaver_core::TenantId;
use palaver_core::ports::{QueueConsumer, QueueTopic, TaskQueue};
use palaver_server::admin_cli::{self, CommandRequest};
use palaver_service::admin::AdminCommand;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const ADMIN: &str = "admin-commands-test-token-0123456789";

/// Reads `im.admin.command.result` in a group of its own.
struct Results {
    consumer: Box<dyn QueueConsumer>,
    seen: Vec<Value>,
}

impl Results {
    async fn new(queue: &Arc<dyn TaskQueue>, name: &str) -> Results {
        let consumer = queue.subscribe(QueueTopic::AdminResult, &format!("test.{name}")).await.unwrap();
        Results { consumer, seen: Vec::new() }
    }

    /// The `n`-th result for `id` (1-based), waiting for it.
    async fn nth(&mut self, id: &str, n: usize) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let have: Vec<&Value> = self.seen.iter().filter(|r| r["command_id"] == id).collect();
            if have.len() >= n {
                return have[n - 1].clone();
            }
            let d = tokio::time::timeout_at(deadline, self.consumer.next())
                .await
                .unwrap_or_else(|_| panic!("no result {n} for {id}; seen {:?}", self.seen))
                .unwrap();
            self.seen.push(serde_json::from_slice(&d.record.payload).unwrap());
        }
    }
}

async fn send(queue: &Arc<dyn TaskQueue>, id: &str, kind: &str, payload: Value) {
    let cmd = AdminCommand {
        command_id: id.into(),
        tenant_code: Some("default".into()),
        kind: kind.into(),
        payload,
        ..AdminCommand::default()
    };
    queue.produce(cmd.record()).await.unwrap();
}

/// Waits for a frame matching `pred`.
async fn wait_for(c: &mut Client, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        if let Some(f) = c.next().await
            && pred(&f)
        {
            return f;
        }
    }
    panic!("no {what}");
}

async fn login_as(addr: std::net::SocketAddr, login: &str, pass: &str) -> (Client, Value) {
    use base64::Engine;
    let mut c = Client::connect(addr).await;
    c.req("hi", json!({ "ver": "0.25.3", "dev": "dev1" })).await;
    let secret = base64::engine::general_purpose::STANDARD.encode(format!("{login}:{pass}"));
    let ctrl = c.req("login", json!({ "scheme": "basic", "secret": secret })).await;
    (c, ctrl)
}

/// A command an older version left in the store's file (where the embedded queue used to live) is moved to the
/// queue's own file when the node starts, and runs there once; the store's file keeps no queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_left_in_the_stores_file_runs_once_after_the_move() {
    use palaver_store_sqlite::{SqliteQueue, SqliteStore};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    let old: Arc<dyn TaskQueue> = Arc::new(SqliteQueue::new(store.clone()));
    send(&old, "left", "group.member.mute", json!({ "topic": "grpNone", "user": "usrNone", "duration_ms": 1 })).await;
    store.close().await;

    let node = common::start(dir.path(), &[("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50")]).await;
    let mut results = Results::new(&node.queue(), "moved").await;
    let r = results.nth("left", 1).await;
    assert_eq!(r["command_id"], "left", "{r}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut again = Results::new(&node.queue(), "moved-again").await;
    again.nth("left", 1).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(500), again.consumer.next()).await.is_err(),
        "one result only: {:?}",
        again.seen
    );

    let store = SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    let mut left = SqliteQueue::new(store).subscribe(QueueTopic::AdminCommand, "test.left").await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(300), left.next()).await.is_err(), "the store's file is empty");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_type_runs_once_through_the_embedded_queue() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("PALAVER_ADMIN__TOKEN", ADMIN), ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50")];
    let node = common::start(dir.path(), &env).await;
    let (addr, queue) = (node.addr(), node.queue());
    let mut results = Results::new(&queue, "all").await;

    let mut owner = Client::connect(addr).await;
    owner.signup("owner").await;
    let grp = owner.req("sub", json!({ "topic": "new", "set": { "desc": { "public": { "fn": "team" } } } })).await;
    let grp = grp["topic"].as_str().unwrap().to_owned();
    let mut ann = Client::connect(addr).await;
    let (ann_id, ann_token) = ann.signup("ann").await;
    ann.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ann.req("sub", json!({ "topic": grp })).await["code"], 200);
    let mut ben = Client::connect(addr).await;
    let (ben_id, _) = ben.signup("ben").await;
    ben.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ben.req("sub", json!({ "topic": grp })).await["code"], 200);

    // Mute, then unmute: the publish gate answers GROUP_MUTED meanwhile.
    send(&queue, "mute", "group.member.mute", json!({ "topic": grp, "user": ann_id, "duration_ms": 60_000 })).await;
    let r = results.nth("mute", 1).await;
    assert_eq!(
        (r["status"].clone(), r["tenant_id"].clone(), r["node"].clone()),
        (json!("succeeded"), json!("1"), json!("local"))
    );
    let refused = ann.req("pub", json!({ "topic": grp, "content": "hi" })).await;
    assert_eq!((refused["code"].clone(), refused["text"].clone()), (json!(403), json!("GROUP_MUTED")));
    send(&queue, "unmute", "group.member.mute", json!({ "topic": grp, "user": ann_id, "duration_ms": 0 })).await;
    assert_eq!(results.nth("unmute", 1).await["status"], "succeeded");
    let seq = ann.req("pub", json!({ "topic": grp, "content": "oops" })).await;
    assert_eq!(seq["code"], 202);
    let seq = seq["params"]["seq"].as_i64().unwrap();

    send(&queue, "adm", "group.admin.set", json!({ "topic": grp, "user": ben_id })).await;
    assert_eq!(results.nth("adm", 1).await["detail"]["role"], "admin");
    wait_for(&mut ben, "role event", |f| f["info"]["event"] == "group.role.updated").await;
    send(&queue, "unadm", "group.admin.remove", json!({ "topic": grp, "user": ben_id })).await;
    assert_eq!(results.nth("unadm", 1).await["detail"]["role"], "member");

    send(&queue, "recall", "message.moderate", json!({ "topic": grp, "seq": seq, "action": "recall" })).await;
    assert_eq!(results.nth("recall", 1).await["status"], "succeeded");
    wait_for(&mut ben, "pres del", |f| f["pres"]["what"] == "del").await;

    send(&queue, "kick", "group.member.remove", json!({ "topic": grp, "user": ben_id })).await;
    assert_eq!(results.nth("kick", 1).await["status"], "succeeded");
    wait_for(&mut ben, "removal", |f| f["info"]["event"] == "group.member.removed").await;

    send(&queue, "del", "group.delete", json!({ "topic": grp })).await;
    assert_eq!(results.nth("del", 1).await["status"], "succeeded");
    wait_for(&mut ann, "pres gone", |f| f["pres"]["what"] == "gone" && f["pres"]["src"] == grp.as_str()).await;

    send(&queue, "file", "file.audit.update", json!({ "file": "f1", "status": "blocked" })).await;
    assert_eq!(results.nth("file", 1).await["reason"], "FILE_NOT_FOUND");

    // A report filed over the API, listed for the Admin side, resolved by a command twice: one effect.
    let auth = format!("Token {ann_token}");
    let headers = [("X-Tinode-APIKey", KEY), ("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    let body = json!({ "target_type": "user", "target": ben_id, "reason": "spam", "note": "links" }).to_string();
    let (status, created) = http_with(addr, "POST", "/v1/im/reports", &headers, &body).await;
    assert_eq!(status, 200, "{created}");
    let report = serde_json::from_str::<Value>(&created).unwrap()["report"]["id"].as_i64().unwrap();
    let bad = json!({ "target_type": "planet", "target": "x", "reason": "r" }).to_string();
    let (status, refused) = http_with(addr, "POST", "/v1/im/reports", &headers, &bad).await;
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(
        (status, refused["code"].clone(), refused["reason"].clone()),
        (400, json!(400), json!("BAD_TARGET_TYPE"))
    );
    let unknown_field = json!({ "target_type": "user", "target": ben_id, "reason": "r", "colour": 1 }).to_string();
    let (status, refused) = http_with(addr, "POST", "/v1/im/reports", &headers, &unknown_field).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&refused).unwrap()["reason"].clone()),
        (400, json!("BAD_ARGUMENT"))
    );
    let admin = format!("Bearer {ADMIN}");
    let admin_h = [("Authorization", admin.as_str())];
    let (status, refused) = http_with(addr, "GET", "/v1/admin/tenants/1/reports?limit=0", &admin_h, "").await;
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!((status, refused["reason"].clone()), (400, json!("BAD_LIMIT")), "{refused}");
    let (status, list) = http_with(addr, "GET", "/v1/admin/tenants/1/reports?open=true", &admin_h, "").await;
    assert_eq!(status, 200, "{list}");
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["reports"][0]["id"], report);
    assert_eq!(http_with(addr, "GET", "/v1/admin/tenants/1/reports", &[], "").await.0, 401);
    let resolve = json!({ "report": report, "resolution": "actioned" });
    send(&queue, "res", "abuse.report.resolve", resolve.clone()).await;
    send(&queue, "res", "abuse.report.resolve", resolve).await;
    let (first, second) = (results.nth("res", 1).await, results.nth("res", 2).await);
    assert_eq!(first, second, "the duplicate republished the stored result");
    wait_for(&mut ann, "the reporter's notification", |f| f["info"]["event"] == "system_notification.created").await;

    // Poison, then a command that still runs.
    queue
        .produce(palaver_core::ports::QueueRecord::new(QueueTopic::AdminCommand, "x", b"garbage".to_vec()))
        .await
        .unwrap();
    send(&queue, "pw", "user.password.reset", json!({ "user": ben_id, "password": "brand-new-pw" })).await;
    assert_eq!(results.nth("pw", 1).await["status"], "succeeded");
    wait_for(&mut ben, "password reset close", |f| f["ctrl"]["code"] == 205).await;
    assert_eq!(login_as(addr, "ben", "brand-new-pw").await.1["code"], 200);
    let mut dead = queue.subscribe(QueueTopic::DeadLetter, "test.dlq").await.unwrap();
    let d = tokio::time::timeout(Duration::from_secs(5), dead.next()).await.unwrap().unwrap();
    assert_eq!(d.record.payload, b"garbage");
    assert_eq!(d.record.header("source_topic"), Some("admin_command"));

    // The HTTP front: the same command path and result record; a retry with the same key changes nothing.
    let key = [("Authorization", admin.as_str()), ("Idempotency-Key", "http-dis-1")];
    let path = format!("/v1/admin/tenants/1/users/{ben_id}/disable");
    let (status, body) = http_with(addr, "POST", &path, &key, "{}").await;
    assert_eq!(status, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (r["command_id"].clone(), r["type"].clone(), r["status"].clone()),
        (json!("http-dis-1"), json!("user.disable"), json!("succeeded"))
    );
    assert_eq!(http_with(addr, "POST", &path, &key, "{}").await.1, body, "a retry answers the stored result");
    assert_eq!(results.nth("http-dis-1", 1).await, r, "the HTTP front's result is published too");
    let (status, stored) = http_with(addr, "GET", "/v1/admin/tenants/1/commands/http-dis-1", &admin_h, "").await;
    assert_eq!((status, serde_json::from_str::<Value>(&stored).unwrap()), (200, r));
    let enable = json!({ "type": "user.enable", "payload": { "user": ben_id } }).to_string();
    let (status, body) = http_with(addr, "POST", "/v1/admin/tenants/1/commands", &admin_h, &enable).await;
    assert_eq!(status, 200, "{body}");
    let unknown = json!({ "type": "user.enable", "payload": { "user": "usr-nope" } }).to_string();
    let (status, body) = http_with(addr, "POST", "/v1/admin/tenants/1/commands", &admin_h, &unknown).await;
    assert_eq!(status, 400, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (r["code"].clone(), r["reason"].clone(), r["status"].clone()),
        (json!(400), json!("BAD_USER_ID"), json!("rejected"))
    );
    let explode = json!({ "type": "user.explode", "payload": {} }).to_string();
    let (status, body) = http_with(addr, "POST", "/v1/admin/tenants/1/commands", &admin_h, &explode).await;
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, r["code"].clone(), r["reason"].clone()), (400, json!(400), json!("UNKNOWN_TYPE")), "{r}");
    assert!(r["message"].is_string(), "the one error body: {r}");
    let (status, body) = http_with(addr, "GET", "/v1/admin/tenants/1/commands/never-ran", &admin_h, "").await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()["reason"].clone()),
        (404, json!("COMMAND_NOT_FOUND"))
    );

    // The CLI produces to the same queue and waits for the result.
    let cfg = common::config(dir.path(), &env);
    let request = CommandRequest {
        kind: "user.device.revoke".into(),
        tenant: "default".into(),
        payload: json!({ "user": ann_id, "device": "dev1" }).to_string(),
        command_id: Some("cli-1".into()),
        wait: Some(Duration::from_secs(10)),
    };
    let result = admin_cli::run(&cfg, request).await.unwrap().unwrap();
    assert_eq!((result.status.as_str(), result.kind.as_str()), ("succeeded", "user.device.revoke"));

    // The node counts what it settled.
    let (_, metrics) = http_with(addr, "GET", "/metrics", &admin_h, "").await;
    for line in [
        "palaver_admin_commands_total{outcome=\"repeat\"} 2",
        "palaver_admin_commands_total{outcome=\"dead_letter\"} 1",
    ] {
        assert!(metrics.contains(line), "no {line} in {metrics}");
    }

    // Every command that ran left an audit row.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let file = palaver_store_sqlite::SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    let audit = palaver_core::ports::AuditStore::list_audit(&file, TenantId::DEFAULT, 1000).await.unwrap();
    for id in ["mute", "unmute", "adm", "recall", "kick", "del", "res", "pw", "http-dis-1", "cli-1"] {
        assert!(
            audit.iter().any(|e| e.target_kind == "command" && e.target_id == id),
            "no audit row for {id}: {:?}",
            audit.iter().map(|e| (&e.action, &e.target_id)).collect::<Vec<_>>()
        );
    }
    assert_eq!(audit.iter().filter(|e| e.target_id == "res").count(), 1, "the duplicate is audited once");
    file.close().await;
    node.shutdown().await;
}
