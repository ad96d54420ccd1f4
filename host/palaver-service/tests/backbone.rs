//! The service's side of the task queue, on the in-process adapters: audited actions and summaries land in the
//! outbox, the relay moves a tenant's entries to the queue in order (one relay per tenant, retrying while the queue
//! refuses), the outbox bound refuses with a metric, and the audit consumer stores each event once.

mod harness;

use async_trait::async_trait;
use harness::{Client, service_on};
use palaver_core::ports::{
    AuditEvent, AuditStore, NoHooks, OutboxStore, QueueConsumer, QueueRecord, QueueTopic, TaskQueue,
};
use palaver_core::{StoreError, StoreResult, TenantId, UserId};
use palaver_service::backbone::audit::AuditConsumer;
use palaver_service::backbone::relay::{Relay, RelayConfig};
use palaver_service::{Backbone, Eviction, ServiceConfig, new_event_id};
use palaver_store_memory::{MemoryAudit, MemoryOutbox, MemoryQueue};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const T: TenantId = TenantId::DEFAULT;

/// The outbox's pending records of `topic`, decoded.
async fn owed(outbox: &MemoryOutbox, topic: QueueTopic) -> Vec<Value> {
    let entries = outbox.pending(T, 10_000).await.unwrap();
    entries
        .into_iter()
        .filter(|e| e.record.topic == topic)
        .map(|e| serde_json::from_slice(&e.record.payload).unwrap())
        .collect()
}

fn actions(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["action"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn logins_password_changes_and_session_controls_are_audited() {
    let outbox = MemoryOutbox::new();
    let cfg = ServiceConfig { password_change_requires_current: false, ..ServiceConfig::default() };
    let svc = service_on(cfg, Arc::new(NoHooks), outbox.clone());
    let mut a = Client::connect(&svc);
    a.signup("audited", "secret1").await;
    let mut b = Client::connect_from(&svc, "203.0.113.9:5555");
    assert_eq!(b.login("audited", "wrong").await["code"], 401);
    let mut c = Client::connect(&svc);
    assert_eq!(c.login("audited", "secret1").await["code"], 200);
    let (ctrl, _) = c
        .req(
            "acc",
            json!({ "user": c.user.clone(), "scheme": "basic", "secret": harness::basic("audited", "secret2") }),
        )
        .await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let user = UserId::parse(&a.user).unwrap();
    svc.evict(T, user, Eviction { reason: "test".into(), ..Eviction::default() }).await.unwrap();
    svc.set_account_state(T, user, false).await.unwrap();
    svc.set_account_state(T, user, true).await.unwrap();

    let audit = owed(&outbox, QueueTopic::Audit).await;
    assert_eq!(
        actions(&audit),
        ["login.failure", "login.success", "user.password.change", "session.evict", "user.disable", "user.enable"],
        "the sign-up's own login is not a login attempt: {audit:#?}"
    );
    let failure = &audit[0];
    assert_eq!((failure["target_kind"].as_str(), failure["target_id"].as_str()), (Some("login"), Some("audited")));
    assert_eq!(failure["client_ip"], "203.0.113.9");
    assert!(failure["detail"]["reason"].is_string());
    assert_eq!(audit[1]["actor_id"], json!(user.0 as i64));
    assert_eq!(audit[1]["target_id"], a.user);
    assert_eq!(audit[3]["actor_kind"], "admin");
    let ids: std::collections::HashSet<&str> = audit.iter().map(|e| e["event_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), audit.len(), "every event has its own id");
    let summaries = owed(&outbox, QueueTopic::AdminEvent).await;
    let states: Vec<&Value> = summaries.iter().filter(|s| s["type"] == "user.state").collect();
    assert_eq!(states.len(), 2);
    assert_eq!(
        (states[0]["data"]["state"].as_str(), states[1]["data"]["state"].as_str()),
        (Some("suspended"), Some("active"))
    );
    assert_eq!(states[0]["target"], json!({ "kind": "user", "id": a.user }));
}

#[tokio::test]
async fn groups_created_joined_left_and_deleted_are_summarized() {
    let outbox = MemoryOutbox::new();
    let svc = service_on(ServiceConfig::default(), Arc::new(NoHooks), outbox.clone());
    let mut owner = Client::connect(&svc);
    owner.signup("g-owner", "secret1").await;
    let grp = owner.new_group("summaries").await;
    let mut member = Client::connect(&svc);
    member.signup("g-member", "secret1").await;
    assert_eq!(member.sub(&grp).await["code"], 200);
    let (ctrl, _) = member.req("leave", json!({ "topic": grp, "unsub": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let (ctrl, _) = owner.req("del", json!({ "topic": grp, "what": "topic", "hard": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let kinds: Vec<(String, Value)> = owed(&outbox, QueueTopic::AdminEvent)
        .await
        .into_iter()
        .filter(|s| s["target"]["id"] == grp)
        .map(|s| (s["type"].as_str().unwrap().to_owned(), s["data"]["members"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("group.created".to_owned(), json!(1)),
            ("group.members".to_owned(), json!(2)),
            ("group.members".to_owned(), json!(1)),
            ("group.deleted".to_owned(), json!(1)),
        ]
    );
}

fn record(tenant: TenantId, n: usize) -> QueueRecord {
    QueueRecord::new(QueueTopic::Audit, format!("{}:k", tenant.0), format!("{}-{n}", tenant.0).into_bytes())
}

fn relay(outbox: &MemoryOutbox, queue: Arc<dyn TaskQueue>, state: &Arc<Backbone>, owner: &str, batch: usize) -> Relay {
    let cfg = RelayConfig { owner: owner.into(), batch, ..RelayConfig::default() };
    Relay::new(Arc::new(outbox.clone()), queue, None, state.clone(), cfg)
}

#[tokio::test]
async fn the_relay_drains_in_order_and_one_relay_holds_a_tenant() {
    let outbox = MemoryOutbox::new();
    let queue = MemoryQueue::new();
    let state = Arc::new(Backbone::new(0));
    for n in 0..25 {
        outbox.put(T, &[record(T, n)]).await.unwrap();
    }
    let first = relay(&outbox, Arc::new(queue.clone()), &state, "node-a", 10);
    let second = relay(&outbox, Arc::new(queue.clone()), &state, "node-b", 10);
    let pass = first.pass().await;
    assert_eq!((pass.produced, pass.more, pass.failed), (10, true, false));
    assert_eq!(second.pass().await.produced, 0, "node-a holds the tenant's lease");
    while first.pass().await.produced > 0 {}
    let got: Vec<String> =
        queue.records(QueueTopic::Audit).iter().map(|r| String::from_utf8(r.payload.clone()).unwrap()).collect();
    assert_eq!(got, (0..25).map(|n| format!("1-{n}")).collect::<Vec<_>>());
    assert_eq!(outbox.depth(T).await.unwrap(), 0);
    let text = palaver_core::render_metrics(state.as_ref());
    assert!(text.contains("palaver_outbox_produced_total 25\n"), "{text}");
    assert!(text.contains("palaver_outbox_depth{tenant=\"1\"} 0\n"), "{text}");
}

/// A queue that refuses every produce while `down` is set, as Kafka does while no broker answers.
#[derive(Clone)]
struct Flaky {
    inner: MemoryQueue,
    down: Arc<AtomicBool>,
}

#[async_trait]
impl TaskQueue for Flaky {
    async fn produce(&self, record: QueueRecord) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("no broker".into()));
        }
        self.inner.produce(record).await
    }
    async fn subscribe(&self, topic: QueueTopic, group: &str) -> StoreResult<Box<dyn QueueConsumer>> {
        self.inner.subscribe(topic, group).await
    }
}

#[tokio::test]
async fn the_outbox_grows_while_the_queue_is_down_and_drains_in_order_after() {
    let outbox = MemoryOutbox::new();
    let flaky = Flaky { inner: MemoryQueue::new(), down: Arc::new(AtomicBool::new(true)) };
    let state = Arc::new(Backbone::new(0));
    let cfg = RelayConfig {
        interval: Duration::from_millis(20),
        backoff_max: Duration::from_millis(50),
        ..RelayConfig::default()
    };
    let task = Relay::new(Arc::new(outbox.clone()), Arc::new(flaky.clone()), None, state.clone(), cfg).spawn();
    for n in 0..30 {
        outbox.put(T, &[record(T, n)]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(outbox.depth(T).await.unwrap(), 30, "nothing is lost or dropped while the queue is down");
    assert!(flaky.inner.records(QueueTopic::Audit).is_empty());
    flaky.down.store(false, Ordering::SeqCst);
    for _ in 0..100 {
        if outbox.depth(T).await.unwrap() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let got: Vec<String> =
        flaky.inner.records(QueueTopic::Audit).iter().map(|r| String::from_utf8(r.payload.clone()).unwrap()).collect();
    assert_eq!(got, (0..30).map(|n| format!("1-{n}")).collect::<Vec<_>>(), "the backlog drains oldest first");
    let text = palaver_core::render_metrics(state.as_ref());
    assert!(!text.contains("palaver_outbox_produce_failures_total 0\n"), "failures were counted: {text}");
}

#[tokio::test]
async fn a_full_outbox_refuses_new_records_with_a_metric() {
    let outbox = MemoryOutbox::new();
    let cfg = ServiceConfig { outbox_max_depth: 2, ..ServiceConfig::default() };
    let svc = service_on(cfg, Arc::new(NoHooks), outbox.clone());
    let event = || AuditEvent::new(new_event_id(), T, "test", ("system", None), ("user", "x".into()), 1);
    svc.audit(T, event()).await.unwrap();
    svc.audit(T, event()).await.unwrap();
    assert!(matches!(svc.audit(T, event()).await, Err(StoreError::Unavailable(_))));
    assert_eq!(outbox.depth(T).await.unwrap(), 2);
    assert!(svc.render_metrics().contains("palaver_outbox_refused_total 1\n"));
}

#[tokio::test]
async fn the_audit_consumer_stores_each_event_once_and_dead_letters_garbage() {
    let queue = MemoryQueue::new();
    let store = MemoryAudit::new();
    let state = Arc::new(Backbone::new(0));
    let event = AuditEvent::new(new_event_id(), T, "login.success", ("user", Some(7)), ("user", "usrX".into()), 5);
    let rec = palaver_service::backbone::audit_record(&event);
    queue.produce(rec.clone()).await.unwrap();
    queue.produce(QueueRecord::new(QueueTopic::Audit, "1:x", b"not json".to_vec())).await.unwrap();
    queue.produce(rec).await.unwrap(); // a redelivery
    let task =
        AuditConsumer::new(Arc::new(queue.clone()), Arc::new(store.clone()), state.clone(), "g.audit".into()).spawn();
    for _ in 0..100 {
        if state_count(&state, "palaver_audit_repeats_total") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    task.abort();
    assert_eq!(store.list_audit(T, 10).await.unwrap(), [event]);
    let dead = queue.records(QueueTopic::DeadLetter);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].payload, b"not json");
    assert_eq!(dead[0].header("dlq.offset"), Some("1"));
    assert!(dead[0].header("dlq.error").is_some_and(|e| e.contains("not an audit event")));
    // Everything was committed: a new member of the group finds nothing before a new record.
    let mut again = queue.subscribe(QueueTopic::Audit, "g.audit").await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(100), again.next()).await.is_err());
}

fn state_count(state: &Backbone, name: &str) -> u64 {
    let text = palaver_core::render_metrics(state);
    text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Holds every message for review.
struct HoldAll;

#[async_trait]
impl palaver_core::ports::PublishHook for HoldAll {
    async fn before_publish(
        &self,
        _: &palaver_core::ports::PublishContext,
        _: &Value,
        _: Option<&serde_json::Map<String, Value>>,
    ) -> palaver_core::ports::PublishVerdict {
        palaver_core::ports::PublishVerdict::Hold { flags: vec!["review".into()] }
    }
}

#[tokio::test]
async fn moderation_decisions_are_audited() {
    use palaver_core::AuditStatus;
    let outbox = MemoryOutbox::new();
    let svc = service_on(ServiceConfig::default(), Arc::new(HoldAll), outbox.clone());
    let mut a = Client::connect(&svc);
    a.signup("held", "secret1").await;
    let grp = a.new_group("moderated").await;
    let first = a.publish(&grp, json!("one")).await["params"]["seq"].as_i64().unwrap();
    let second = a.publish(&grp, json!("two")).await["params"]["seq"].as_i64().unwrap();
    svc.set_message_audit(T, &grp, first, AuditStatus::Pass).await.unwrap();
    svc.set_message_audit(T, &grp, second, AuditStatus::Reject).await.unwrap();
    assert!(svc.set_message_audit(T, &grp, first, AuditStatus::Pass).await.is_err(), "released already");
    let audit = owed(&outbox, QueueTopic::Audit).await;
    let decisions: Vec<&Value> =
        audit.iter().filter(|e| e["action"].as_str().unwrap().starts_with("message.")).collect();
    assert_eq!(decisions.len(), 2, "a refused decision is not audited: {decisions:#?}");
    assert_eq!(decisions[0]["action"], "message.release");
    assert_eq!((decisions[0]["topic"].as_str(), decisions[0]["seq"].as_i64()), (Some(grp.as_str()), Some(first)));
    assert_eq!(decisions[0]["detail"]["author"], a.user);
    assert_eq!(decisions[1]["action"], "message.reject");
    assert_eq!(decisions[1]["target_id"], format!("{grp}:{second}"));
}
