//! Admin commands through the consumer, on two in-process nodes sharing one store, bus and task queue: every
//! command type's effect reaches a client on the other node; a duplicate runs once and republishes its stored
//! result; a poison record is dead-lettered and the next command still runs; a consumer that settled a command
//! and died before its commit does not apply it again; transient failures are retried, then dead-lettered.

mod harness;

use harness::{Client, basic, cluster_with_store};
use palaver_api::CommandName;
use palaver_core::ports::{OutboxStore, QueueRecord, QueueTopic, ReportStore, TaskQueue};
use palaver_core::{StoreError, StoreResult, TenantId};
use palaver_service::Service;
use palaver_service::admin::{AdminCommand, AdminConsumer, ConsumerConfig, TenantDirectory};
use palaver_store_memory::{MemoryQueue, MemoryStore};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// The embedded directory: tenant 1, code `default`.
struct OneTenant;

#[async_trait::async_trait]
impl TenantDirectory for OneTenant {
    async fn resolve(&self, id: Option<&str>, code: Option<&str>) -> StoreResult<Option<TenantId>> {
        Ok((id == Some("1") || code == Some("default")).then_some(TenantId::DEFAULT))
    }
}

/// A registry that is down for its first `down` calls.
struct Flaky {
    down: u32,
    calls: AtomicU32,
}

#[async_trait::async_trait]
impl TenantDirectory for Flaky {
    async fn resolve(&self, id: Option<&str>, code: Option<&str>) -> StoreResult<Option<TenantId>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.down {
            return Err(StoreError::Unavailable("registry down".into()));
        }
        OneTenant.resolve(id, code).await
    }
}

fn cfg() -> ConsumerConfig {
    ConsumerConfig {
        group: "palaver".into(),
        max_attempts: 3,
        backoff_initial: Duration::from_millis(5),
        backoff_max: Duration::from_millis(20),
    }
}

struct Rig {
    nodes: Vec<Service>,
    store: Arc<MemoryStore>,
    queue: MemoryQueue,
    stop: watch::Sender<bool>,
}

impl Rig {
    fn new(tenants: Arc<dyn TenantDirectory>) -> Rig {
        let (nodes, store) = cluster_with_store(2);
        let queue = MemoryQueue::new();
        let (stop, rx) = watch::channel(false);
        let consumer = AdminConsumer::new(nodes[0].clone(), Arc::new(queue.clone()), tenants, cfg());
        tokio::spawn(consumer.run(rx));
        // The outbox relay, as the server runs it: entries to the queue in order, then removed.
        let (outbox, q) = (store.outbox().clone(), queue.clone());
        tokio::spawn(async move {
            loop {
                let pending = outbox.pending(TenantId::DEFAULT, 100).await.unwrap();
                for e in &pending {
                    q.produce(e.record.clone()).await.unwrap();
                }
                let ids: Vec<i64> = pending.iter().map(|e| e.id).collect();
                outbox.remove(TenantId::DEFAULT, &ids).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        Rig { nodes, store, queue, stop }
    }

    async fn send(&self, kind: &str, id: &str, payload: Value) {
        let cmd = AdminCommand {
            command_id: id.into(),
            tenant_id: Some("1".into()),
            kind: kind.into(),
            payload,
            ..AdminCommand::default()
        };
        self.queue.produce(cmd.record()).await.unwrap();
    }

    /// The results published for `id` so far, waiting for at least `n`.
    async fn results(&self, id: &str, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            let found: Vec<Value> = self
                .queue
                .records(QueueTopic::AdminResult)
                .iter()
                .map(|r| serde_json::from_slice::<Value>(&r.payload).unwrap())
                .filter(|v| v["command_id"] == id)
                .collect();
            if found.len() >= n {
                return found;
            }
            assert!(tokio::time::Instant::now() < deadline, "no {n} results for {id}: {found:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn result(&self, kind: &str, id: &str, payload: Value) -> Value {
        self.send(kind, id, payload).await;
        self.results(id, 1).await.remove(0)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// How many records for `topic` wait in the store's outbox.
async fn owed(store: &MemoryStore, topic: QueueTopic) -> usize {
    let pending = store.outbox().pending(TenantId::DEFAULT, 1000).await.unwrap();
    pending.iter().filter(|e| e.record.topic == topic).count()
}

async fn user(svc: &Service, login: &str) -> Client {
    let mut c = Client::connect(svc);
    c.signup(login, "secret123").await;
    c
}

async fn login(svc: &Service, login: &str, pass: &str, dev: &str) -> (Client, Value) {
    let mut c = Client::connect(svc);
    c.req("hi", json!({ "ver": "0.25.3", "ua": "test/1.0", "dev": dev })).await;
    let (ctrl, _) = c.req("login", json!({ "scheme": "basic", "secret": basic(login, pass) })).await;
    if ctrl["code"] == 200 {
        c.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    }
    (c, ctrl)
}

async fn info(c: &mut Client, event: &str) -> Value {
    let name = event.to_owned();
    c.wait_for(event, move |v| v["info"]["event"] == name.as_str()).await.0["info"].clone()
}

async fn evicted(c: &mut Client) -> Value {
    c.wait_for("eviction", |v| v["ctrl"]["code"] == 205).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_commands_take_effect_on_the_other_node() {
    let rig = Rig::new(Arc::new(OneTenant));
    let bob = user(&rig.nodes[1], "bob").await;
    let (mut bob_phone, _) = login(&rig.nodes[1], "bob", "secret123", "phone").await;
    let r = rig.result("user.disable", "d1", json!({ "user": bob.user, "reason": "spam" })).await;
    assert_eq!(
        (r["status"].clone(), r["code"].clone(), r["type"].clone()),
        (json!("succeeded"), json!(200), json!("user.disable"))
    );
    assert_eq!(r["tenant_id"], "1");
    assert_eq!(r["node"], "node0");
    assert!(r["finished_at"].as_str().unwrap().ends_with('Z'));
    evicted(&mut bob_phone).await;
    assert_eq!(login(&rig.nodes[1], "bob", "secret123", "x").await.1["code"], 403, "a disabled account cannot log in");
    assert_eq!(rig.result("user.enable", "e1", json!({ "user": bob.user })).await["status"], "succeeded");
    let (mut phone, ctrl) = login(&rig.nodes[1], "bob", "secret123", "phone").await;
    assert_eq!(ctrl["code"], 200);
    let (mut tablet, _) = login(&rig.nodes[1], "bob", "secret123", "tablet").await;

    let r = rig.result("user.device.revoke", "v1", json!({ "user": bob.user, "device": "phone" })).await;
    assert_eq!(r["status"], "succeeded", "{r}");
    evicted(&mut phone).await;
    assert!(!tablet.collect(100).await.iter().any(|f| f["ctrl"]["code"] == 205), "other devices stay");

    tablet.sub("me").await;
    let r = rig.result("user.password.reset", "p1", json!({ "user": bob.user, "password": "n3w-secret" })).await;
    assert_eq!(r["status"], "succeeded", "{r}");
    info(&mut tablet, "security.password_reset").await;
    evicted(&mut tablet).await;
    assert_eq!(login(&rig.nodes[1], "bob", "secret123", "x").await.1["code"], 401, "the old password is gone");
    assert_eq!(login(&rig.nodes[1], "bob", "n3w-secret", "x").await.1["code"], 200);

    let nobody = palaver_core::UserId(0x1234_5678).to_string();
    let r = rig.result("user.disable", "d2", json!({ "user": nobody })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("USER_NOT_FOUND")));
    let r = rig.result("user.password.reset", "p2", json!({ "user": bob.user, "password": "x" })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("BAD_PASSWORD")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_delete_deletes_once_and_a_deleted_account_stays_deleted() {
    let rig = Rig::new(Arc::new(OneTenant));
    let eve = user(&rig.nodes[0], "eve").await;
    let (mut phone, _) = login(&rig.nodes[1], "eve", "secret123", "phone").await;
    let r = rig.result("user.delete", "x1", json!({ "user": eve.user })).await;
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!((r["detail"]["state"].clone(), r["detail"]["erased"].clone()), (json!("deleted"), json!(false)));
    evicted(&mut phone).await;
    assert_eq!(login(&rig.nodes[1], "eve", "secret123", "x").await.1["code"], 401, "the login is gone");
    let id = palaver_core::UserId::parse(&eve.user).unwrap();
    let kept = palaver_core::ports::UserStore::get_user(&*rig.store, TenantId::DEFAULT, id).await.unwrap().unwrap();
    assert_eq!(kept.public, Some(json!({ "fn": "eve" })), "a soft deletion keeps the profile for audit");
    for (kind, id) in [("user.enable", "x2"), ("user.disable", "x3"), ("user.device.revoke", "x4")] {
        let r = rig.result(kind, id, json!({ "user": eve.user, "device": "phone" })).await;
        assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("USER_NOT_FOUND")), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commands_take_effect_on_the_other_node() {
    let rig = Rig::new(Arc::new(OneTenant));
    let mut owner = user(&rig.nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ann = user(&rig.nodes[1], "ann").await;
    ann.sub("me").await;
    assert_eq!(ann.sub(&grp).await["code"], 200);
    let mut ben = user(&rig.nodes[1], "ben").await;
    ben.sub("me").await;
    assert_eq!(ben.sub(&grp).await["code"], 200);

    let mute = json!({ "topic": grp, "user": ann.user, "duration_ms": 60_000 });
    assert_eq!(rig.result("group.member.mute", "m1", mute).await["status"], "succeeded");
    assert_eq!(info(&mut ann, "group.mute.updated").await["payload"]["muted"], true);
    let refused = ann.publish(&grp, json!("muted?")).await;
    assert_eq!((refused["code"].clone(), refused["text"].clone()), (json!(403), json!("GROUP_MUTED")));
    let unmute = json!({ "topic": grp, "user": ann.user, "duration_ms": 0 });
    assert_eq!(rig.result("group.member.mute", "m2", unmute).await["status"], "succeeded");
    assert_eq!(info(&mut ann, "group.mute.updated").await["payload"]["muted"], false);
    assert_eq!(ann.publish(&grp, json!("free")).await["code"], 202);

    let set = json!({ "topic": grp, "user": ben.user });
    assert_eq!(rig.result("group.admin.set", "a1", set.clone()).await["detail"]["role"], "admin");
    assert_eq!(info(&mut ben, "group.role.updated").await["payload"]["role"], "admin");
    assert_eq!(rig.result("group.admin.remove", "a2", set).await["detail"]["role"], "member");
    ben.wait_for("demotion", |v| {
        v["info"]["event"] == "group.role.updated" && v["info"]["payload"]["role"] == "member"
    })
    .await;
    let owner_mute = json!({ "topic": grp, "user": owner.user, "duration_ms": 1000 });
    let r = rig.result("group.member.mute", "m3", owner_mute).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("OWNER_PROTECTED")));

    // A recall tombstones the message for every reader.
    let seq = ann.publish(&grp, json!("regret")).await["params"]["seq"].as_i64().unwrap();
    let recall = json!({ "topic": grp, "seq": seq, "action": "recall" });
    assert_eq!(rig.result("message.moderate", "r1", recall).await["status"], "succeeded");
    let (del, _) = ben.wait_for("pres del", |v| v["pres"]["what"] == "del").await;
    assert_eq!(del["pres"]["delseq"][0]["low"], seq);
    let r = rig.result("message.moderate", "r2", json!({ "topic": grp, "seq": seq, "action": "release" })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("MESSAGE_NOT_FOUND")), "recalled");
    let r = rig.result("message.moderate", "r3", json!({ "topic": grp, "seq": 1, "action": "release" })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("NOT_HELD")));
    let r = rig.result("message.moderate", "r4", json!({ "topic": grp, "seq": 1, "action": "nuke" })).await;
    assert_eq!(r["reason"], "BAD_ACTION");

    let remove = json!({ "topic": grp, "user": ben.user });
    assert_eq!(rig.result("group.member.remove", "x1", remove).await["status"], "succeeded");
    assert_eq!(info(&mut ben, "group.member.removed").await["payload"]["user_id"], ben.user.as_str());

    assert_eq!(rig.result("group.delete", "g1", json!({ "topic": grp })).await["status"], "succeeded");
    let (gone, _) = ann.wait_for("pres gone", |v| v["pres"]["what"] == "gone").await;
    assert_eq!(gone["pres"]["src"], grp.as_str());
    assert_eq!(info(&mut ann, "group.deleted").await["payload"]["topic"], grp.as_str());
    let r = rig.result("group.delete", "g2", json!({ "topic": grp })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("GROUP_NOT_FOUND")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_files_duplicates_and_poison() {
    let rig = Rig::new(Arc::new(OneTenant));
    let ann = user(&rig.nodes[1], "ann").await;
    let reporter = palaver_core::UserId::parse(&ann.user).unwrap();
    let report = palaver_core::ports::NewReport {
        reporter,
        target_type: palaver_core::ports::ReportTarget::User,
        target: "usrAAAAAAAAAAA".into(),
        reason: "spam".into(),
        note: None,
    };
    let stored = rig.store.add_report(TenantId::DEFAULT, &report, &[], 1).await.unwrap();
    let resolve = json!({ "report": stored.id, "resolution": "actioned", "note": "banned" });
    // The same command twice, then again after it finished: one effect, the stored result every time.
    rig.send("abuse.report.resolve", "rr1", resolve.clone()).await;
    rig.send("abuse.report.resolve", "rr1", resolve.clone()).await;
    let results = rig.results("rr1", 2).await;
    assert_eq!(results[0], results[1], "a repeat republishes the stored result");
    assert_eq!(results[0]["status"], "succeeded");
    let n =
        rig.nodes[1].run_command(TenantId::DEFAULT, reporter, CommandName::NotificationList, json!({})).await.unwrap();
    let kinds: Vec<&Value> = n["notifications"].as_array().unwrap().iter().map(|n| &n["kind"]).collect();
    assert_eq!(kinds, vec!["report_resolved"], "the reporter is told once");
    let closed = rig.store.get_report(TenantId::DEFAULT, stored.id).await.unwrap().unwrap();
    assert_eq!(closed.resolved.unwrap().resolution, "actioned");
    let r = rig.result("abuse.report.resolve", "rr2", resolve).await;
    assert_eq!(r["reason"], "REPORT_CLOSED");
    let events = rig.queue.records(QueueTopic::AdminEvent);
    assert_eq!(events.len(), 1, "one summary for the one state change");

    let r = rig.result("file.audit.update", "f1", json!({ "file": "f1", "status": "blocked" })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("FILE_NOT_FOUND")));
    let r = rig.result("file.audit.update", "f2", json!({ "file": "f1", "status": "gone" })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("rejected"), json!("BAD_FILE_STATUS")));

    // Poison: no command id, then an unknown type and tenant; the next command still runs.
    rig.queue.produce(QueueRecord::new(QueueTopic::AdminCommand, "k", b"{\"type\":1".to_vec())).await.unwrap();
    rig.send("user.explode", "u1", json!({})).await;
    let unknown = AdminCommand {
        command_id: "t1".into(),
        tenant_code: Some("nope".into()),
        kind: "user.enable".into(),
        payload: json!({ "user": ann.user }),
        ..AdminCommand::default()
    };
    rig.queue.produce(unknown.record()).await.unwrap();
    assert_eq!(rig.result("user.enable", "after", json!({ "user": ann.user })).await["status"], "succeeded");
    let dead = rig.queue.records(QueueTopic::DeadLetter);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].payload, b"{\"type\":1");
    assert_eq!(dead[0].header("source_topic"), Some("admin_command"));
    assert!(dead[0].header("offset").is_some() && dead[0].header("error").unwrap().contains("JSON"));
    assert_eq!(rig.results("u1", 1).await[0]["reason"], "UNKNOWN_TYPE");
    assert_eq!(rig.results("t1", 1).await[0]["reason"], "UNKNOWN_TENANT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_settled_but_not_committed_is_not_applied_again() {
    let (nodes, store) = cluster_with_store(2);
    let queue = MemoryQueue::new();
    let ann = user(&nodes[1], "ann").await;
    let reporter = palaver_core::UserId::parse(&ann.user).unwrap();
    let report = palaver_core::ports::NewReport {
        reporter,
        target_type: palaver_core::ports::ReportTarget::Group,
        target: "grpAAAAAAAAAAA".into(),
        reason: "spam".into(),
        note: None,
    };
    let stored = store.add_report(TenantId::DEFAULT, &report, &[], 1).await.unwrap();
    let cmd = AdminCommand {
        command_id: "k1".into(),
        tenant_id: Some("1".into()),
        kind: "abuse.report.resolve".into(),
        payload: json!({ "report": stored.id, "resolution": "dismissed" }),
        ..AdminCommand::default()
    };
    queue.produce(cmd.record()).await.unwrap();
    // The first consumer takes the record and settles it (effect and result), then "dies" before its commit.
    let (_stop, mut rx) = watch::channel(false);
    let first = AdminConsumer::new(nodes[0].clone(), Arc::new(queue.clone()), Arc::new(OneTenant), cfg());
    let mut member = queue.subscribe(QueueTopic::AdminCommand, "palaver").await.unwrap();
    let delivery = member.next().await.unwrap();
    assert!(first.settle(&delivery, &mut rx).await);
    drop(member);
    assert_eq!(owed(&store, QueueTopic::AdminResult).await, 1, "the result is in the outbox");
    assert_eq!(owed(&store, QueueTopic::Audit).await, 1, "and the command's audit event");
    // A new member of the group on the other node gets the record again.
    let second = AdminConsumer::new(nodes[1].clone(), Arc::new(queue.clone()), Arc::new(OneTenant), cfg());
    let (stop, rx) = watch::channel(false);
    tokio::spawn(second.run(rx));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while queue.records(QueueTopic::AdminResult).is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no republished result");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop.send(true);
    let republished: Value = serde_json::from_slice(&queue.records(QueueTopic::AdminResult)[0].payload).unwrap();
    assert_eq!((republished["status"].clone(), republished["node"].clone()), (json!("succeeded"), json!("node0")));
    let n = nodes[1].run_command(TenantId::DEFAULT, reporter, CommandName::NotificationList, json!({})).await.unwrap();
    assert_eq!(n["notifications"].as_array().unwrap().len(), 1, "the effect happened once");
    assert_eq!(owed(&store, QueueTopic::AdminResult).await, 1, "no second result was stored");
    assert_eq!(owed(&store, QueueTopic::Audit).await, 1, "nor a second audit event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_then_dead_lettered_and_failed() {
    // Down for the first two calls: the third attempt succeeds.
    let rig = Rig::new(Arc::new(Flaky { down: 2, calls: AtomicU32::new(0) }));
    let ann = user(&rig.nodes[1], "ann").await;
    assert_eq!(rig.result("user.enable", "ok", json!({ "user": ann.user })).await["status"], "succeeded");
    assert!(rig.queue.records(QueueTopic::DeadLetter).is_empty());
    drop(rig);
    // Down for good: after max_attempts the record is dead-lettered and a failed result published.
    let rig = Rig::new(Arc::new(Flaky { down: u32::MAX, calls: AtomicU32::new(0) }));
    let ann = user(&rig.nodes[1], "ann").await;
    let r = rig.result("user.enable", "down", json!({ "user": ann.user })).await;
    assert_eq!((r["status"].clone(), r["reason"].clone()), (json!("failed"), json!("RETRIES_EXHAUSTED")));
    let dead = rig.queue.records(QueueTopic::DeadLetter);
    assert_eq!(dead.len(), 1);
    assert!(dead[0].header("error").unwrap().contains("registry down"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_another_node_runs_is_waited_for_not_failed() {
    use palaver_core::ports::{CommandEnd, CommandStatus, CommandStore};
    let rig = Rig::new(Arc::new(OneTenant));
    let ann = user(&rig.nodes[1], "ann").await;
    // Another node holds the claim (its lease is running).
    let now = palaver_core::now_millis();
    rig.store.claim(TenantId::DEFAULT, "busy", "user.enable", "elsewhere", now, 60_000).await.unwrap();
    rig.send("user.enable", "busy", json!({ "user": ann.user })).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.queue.records(QueueTopic::DeadLetter).is_empty(), "waiting is not failing");
    assert!(rig.queue.records(QueueTopic::AdminResult).is_empty(), "no result while the other node runs it");
    // The other node finishes: the waiting consumer finds the result and republishes it.
    let result = json!({ "command_id": "busy", "tenant_id": "1", "type": "user.enable", "status": "succeeded",
        "code": 200, "reason": "OK", "message": "done", "node": "elsewhere", "finished_at": "", "detail": {} });
    let end = CommandEnd { kind: "user.enable", status: CommandStatus::Succeeded, result: &result, records: &[], now };
    assert!(rig.store.finish(TenantId::DEFAULT, "busy", &end).await.unwrap());
    let got = rig.results("busy", 1).await;
    assert_eq!(got[0]["node"], "elsewhere");
}
