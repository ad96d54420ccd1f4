//! The gates and listeners around the request path (`GateHook`, `EventHook`): a login gate refuses with its own
//! code and reason and leaves the session unauthenticated; a join gate refuses or narrows a new member's mode, and
//! is not asked again on an existing subscription; stored messages and account changes reach the event worker,
//! which retries only the listeners that failed and dead-letters an event a listener keeps failing.

mod harness;

use harness::{Client, basic, service_with_plugins};
use palaver_api::CommandName;
use palaver_core::ports::{
    AccountChange, EventHook, GateHook, GateVerdict, JoinContext, ListenerFailure, ListenerKind, LoginContext,
    OutboxStore, PluginEvent, QueueTopic, TaskQueue,
};
use palaver_core::{TenantId, UserId};
use palaver_service::ServiceConfig;
use palaver_service::backbone::events::EventWorker;
use palaver_store_memory::{MemoryOutbox, MemoryQueue};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Refuses logins from the user agent `blocked/1`, refuses joins to the group titled by `closed`, and makes every
/// other new member read-only. Counts the joins it was asked about.
#[derive(Default)]
struct Gates {
    closed: Mutex<String>,
    joins: Mutex<Vec<JoinContext>>,
    logins: Mutex<Vec<LoginContext>>,
}

#[async_trait::async_trait]
impl GateHook for Gates {
    fn gates_login(&self, _: TenantId) -> bool {
        true
    }

    fn gates_join(&self, _: TenantId) -> bool {
        true
    }

    async fn on_login(&self, ctx: &LoginContext) -> GateVerdict {
        self.logins.lock().unwrap().push(ctx.clone());
        if ctx.user_agent == "blocked/1" {
            return GateVerdict::Reject { code: 403, reason: "logins from this client are not allowed".into() };
        }
        GateVerdict::Allow
    }

    async fn before_subscribe(&self, ctx: &JoinContext) -> GateVerdict {
        self.joins.lock().unwrap().push(ctx.clone());
        if ctx.topic == *self.closed.lock().unwrap() {
            return GateVerdict::Reject { code: 403, reason: "invite only".into() };
        }
        GateVerdict::Restrict { mode: "JRP".into() }
    }
}

#[tokio::test]
async fn a_login_gate_refuses_with_its_code_and_the_session_stays_unauthenticated() {
    let gates = Arc::new(Gates::default());
    let svc = service_with_plugins(
        ServiceConfig::default(),
        gates.clone(),
        Arc::new(Recorder::default()),
        MemoryOutbox::new(),
    );
    let mut alice = Client::connect_from(&svc, "10.1.2.3:5555");
    alice.signup("alice", "secret123").await;
    let mut other = Client::connect_from(&svc, "10.9.9.9:1");
    other.req("hi", json!({ "ver": "0.25.3", "ua": "blocked/1" })).await;
    // A refused password login reads as a wrong password: the gate must not confirm a guess.
    let (ctrl, _) = other.req("login", json!({ "scheme": "basic", "secret": basic("alice", "secret123") })).await;
    assert_eq!(ctrl["code"], 401, "{ctrl}");
    // A token, unguessable, gets the gate's own answer.
    let (ctrl, _) = other.req("login", json!({ "scheme": "token", "secret": alice.token })).await;
    assert_eq!(
        (ctrl["code"].as_i64(), ctrl["text"].as_str()),
        (Some(403), Some("logins from this client are not allowed")),
        "{ctrl}"
    );
    let (ctrl, _) = other.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ctrl["code"], 401, "the refused session is not logged in: {ctrl}");
    let logins = gates.logins.lock().unwrap().clone();
    assert_eq!(logins.len(), 3, "the sign-up's login and the two refused: {logins:?}");
    assert_eq!((logins[0].scheme.as_str(), logins[0].remote_addr.as_str()), ("basic", "10.1.2.3"));
    assert_eq!((logins[1].remote_addr.as_str(), logins[1].user_agent.as_str()), ("10.9.9.9", "blocked/1"));
    assert_eq!(logins[1].user.to_string(), alice.user);
}

#[tokio::test]
async fn a_join_gate_refuses_or_narrows_new_members_only() {
    let gates = Arc::new(Gates::default());
    let svc = service_with_plugins(
        ServiceConfig::default(),
        gates.clone(),
        Arc::new(Recorder::default()),
        MemoryOutbox::new(),
    );
    let mut owner = Client::connect(&svc);
    owner.signup("owner", "secret123").await;
    let open = owner.new_group("open").await;
    let closed = owner.new_group("closed").await;
    *gates.closed.lock().unwrap() = closed.clone();
    let mut bob = Client::connect(&svc);
    bob.signup("bob", "secret123").await;
    let ctrl = bob.sub(&closed).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["text"].as_str()), (Some(403), Some("invite only")), "{ctrl}");
    let ctrl = bob.sub(&open).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(ctrl["params"]["acs"]["given"], "JRP", "the gate narrowed the mode: {ctrl}");
    let ctrl = bob.publish(&open, json!("hello")).await;
    assert_eq!(ctrl["code"], 403, "a read-only member cannot publish: {ctrl}");
    let asked = gates.joins.lock().unwrap().len();
    bob.req("leave", json!({ "topic": open })).await;
    bob.sub(&open).await;
    assert_eq!(gates.joins.lock().unwrap().len(), asked, "attaching to an existing subscription asks no gate");
    let joins = gates.joins.lock().unwrap().clone();
    assert!(joins.iter().all(|j| j.user.to_string() == bob.user && j.given.contains('W')), "{joins:?}");

    // The `group.join.request` command, joining an open group at once, is a join on one's own too.
    let owner_id = UserId::parse(&owner.user).unwrap();
    for g in [&open, &closed] {
        let open_policy = json!({ "topic": g, "join_policy": "open" });
        svc.run_command(TenantId::DEFAULT, owner_id, CommandName::GroupSettingsSet, open_policy).await.unwrap();
    }
    let mut carol = Client::connect(&svc);
    carol.signup("carol", "secret123").await;
    let carol_id = UserId::parse(&carol.user).unwrap();
    let join = |topic: &str| {
        svc.run_command(TenantId::DEFAULT, carol_id, CommandName::GroupJoinRequest, json!({ "topic": topic }))
    };
    let refused = join(&closed).await.unwrap_err();
    assert_eq!((refused.reason.name(), refused.message.as_str()), ("RULE_REFUSED", "before-subscribe: invite only"));
    join(&open).await.unwrap();
    let ctrl = carol.sub(&open).await;
    assert_eq!(ctrl["params"]["acs"]["given"], "JRP", "narrowed on the command's join too: {ctrl}");
}

#[tokio::test]
async fn a_sign_up_whose_login_a_gate_refuses_is_created_without_the_login() {
    let svc = service_with_plugins(
        ServiceConfig::default(),
        Arc::new(Gates::default()),
        Arc::new(Recorder::default()),
        MemoryOutbox::new(),
    );
    let mut c = Client::connect(&svc);
    c.req("hi", json!({ "ver": "0.25.3", "ua": "blocked/1" })).await;
    let (ctrl, _) = c
        .req("acc", json!({ "user": "new", "scheme": "basic", "secret": basic("dave", "secret123"), "login": true }))
        .await;
    assert_eq!(ctrl["code"], 201, "the account exists, its login was refused: {ctrl}");
    assert!(ctrl["params"]["user"].as_str().is_some_and(|u| u.starts_with("usr")) && ctrl["params"]["token"].is_null());
    let (ctrl, _) = c.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ctrl["code"], 401, "{ctrl}");
}

/// A listener that fails a message whose text is `fail` until its `attempt` reaches `heal_at`, and records every
/// delivery with the listeners it was for.
#[derive(Default)]
struct Recorder {
    heal_at: u32,
    got: Mutex<Vec<Delivered>>,
}

/// One delivery: the event, the listeners it was for (`None`: all), the attempt.
type Delivered = (PluginEvent, Option<Vec<String>>, u32);

#[async_trait::async_trait]
impl EventHook for Recorder {
    fn listeners(&self, _: TenantId, _: ListenerKind) -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    async fn deliver(&self, event: &PluginEvent, only: Option<&[String]>, attempt: u32) -> Vec<ListenerFailure> {
        self.got.lock().unwrap().push((event.clone(), only.map(<[String]>::to_vec), attempt));
        if matches!(event, PluginEvent::Published { content, .. } if content == "skip") {
            // Plugin a's breaker is open: it was not called.
            let reason = "plugin a: its circuit breaker is open".to_owned();
            return vec![ListenerFailure { plugin: "a".into(), reason, skipped: true }];
        }
        let fails = matches!(event, PluginEvent::Published { content, .. } if content == "fail");
        if fails && attempt < self.heal_at && only.is_none_or(|o| o.iter().any(|p| p == "b")) {
            let reason = format!("attempt {attempt} failed");
            return vec![ListenerFailure { plugin: "b".into(), reason, skipped: false }];
        }
        Vec::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_the_listeners_retrying_only_the_failed_ones_then_dead_lettered() {
    let mut cfg = ServiceConfig::default();
    cfg.events.max_attempts = 3;
    cfg.events.backoff_initial = Duration::from_millis(5);
    cfg.events.backoff_max = Duration::from_millis(10);
    let outbox = MemoryOutbox::new();
    let recorder = Arc::new(Recorder { heal_at: 2, ..Recorder::default() });
    let svc = service_with_plugins(cfg.clone(), Arc::new(Gates::default()), recorder.clone(), outbox.clone());
    let queue = Arc::new(MemoryQueue::new());
    svc.queue_through(queue.clone());
    let mut alice = Client::connect(&svc);
    alice.signup("alice", "secret123").await;
    let group = alice.new_group("g").await;
    alice.publish(&group, json!("hello")).await;
    alice.publish(&group, json!("fail")).await;
    // The account event waits in the outbox (the relay's job in a node): hand it to the queue.
    for e in outbox.pending(TenantId::DEFAULT, 100).await.unwrap() {
        if e.record.topic == QueueTopic::PluginEvent {
            queue.produce(e.record).await.unwrap();
        }
    }
    let worker = EventWorker::new(svc.clone(), queue.clone(), "events".into()).spawn();
    let deadline = Instant::now() + Duration::from_secs(5);
    while svc.event_state().delivered() < 3 {
        assert!(
            Instant::now() < deadline,
            "delivered {}: {:?}",
            svc.event_state().delivered(),
            recorder.got.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    worker.abort();
    let got = recorder.got.lock().unwrap().clone();
    let account = got.iter().find(|(e, _, _)| matches!(e, PluginEvent::Account { .. })).expect("the sign-up's event");
    let PluginEvent::Account { user, actor, change, public, tags, .. } = &account.0 else { unreachable!() };
    assert_eq!((user.to_string(), *change), (alice.user.clone(), AccountChange::Created));
    assert_eq!(actor.map(|a| a.to_string()), Some(alice.user.clone()), "signed up by the user");
    assert_eq!((public.clone(), tags.clone()), (Some(json!({ "fn": "alice" })), vec!["tag-alice".to_owned()]));
    let published: Vec<_> = got.iter().filter(|(e, _, _)| matches!(e, PluginEvent::Published { .. })).collect();
    let seqs: Vec<_> = published
        .iter()
        .map(|(e, only, attempt)| match e {
            PluginEvent::Published { topic, seq, .. } => (topic.clone(), *seq, only.clone(), *attempt),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        seqs,
        vec![
            (group.clone(), 1, None, 1),
            (group.clone(), 2, None, 1),
            (group.clone(), 2, Some(vec!["b".to_owned()]), 2)
        ],
        "the failed listener alone was tried again"
    );
    assert_eq!(svc.event_state().dead_lettered(), 0);

    // A listener that never heals: the event goes to the dead-letter topic naming it.
    let recorder = Arc::new(Recorder { heal_at: u32::MAX, ..Recorder::default() });
    let svc = service_with_plugins(cfg, Arc::new(Gates::default()), recorder.clone(), MemoryOutbox::new());
    let queue = Arc::new(MemoryQueue::new());
    svc.queue_through(queue.clone());
    let mut bob = Client::connect(&svc);
    bob.signup("bob", "secret123").await;
    let group = bob.new_group("g").await;
    bob.publish(&group, json!("fail")).await;
    let mut letters = queue.subscribe(QueueTopic::DeadLetter, "dlq").await.unwrap();
    let worker = EventWorker::new(svc.clone(), queue.clone(), "events".into()).spawn();
    let letter = tokio::time::timeout(Duration::from_secs(5), letters.next()).await.expect("a dead letter").unwrap();
    assert_eq!(letter.record.header("dlq.topic"), Some("plugin_event"));
    assert_eq!(letter.record.header("dlq.plugin.b"), Some("attempt 3 failed"));
    assert_eq!(letter.record.header("dlq.plugin.a"), None, "the listener that took it is not named");
    assert_eq!(recorder.got.lock().unwrap().len(), 3, "max_attempts deliveries");
    // Counted once the dead letter is written, which the reader may see first.
    let deadline = Instant::now() + Duration::from_secs(5);
    while svc.event_state().dead_lettered() != 1 {
        assert!(Instant::now() < deadline, "dead letters counted: {}", svc.event_state().dead_lettered());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // A listener whose breaker is open gets its dead letter at once, without waiting out retries.
    bob.publish(&group, json!("skip")).await;
    let letter = tokio::time::timeout(Duration::from_secs(5), letters.next()).await.expect("a dead letter").unwrap();
    worker.abort();
    assert_eq!(letter.record.header("dlq.error"), Some("listeners' circuit breakers are open"));
    assert_eq!(letter.record.header("dlq.plugin.a"), Some("plugin a: its circuit breaker is open"));
    assert_eq!(recorder.got.lock().unwrap().len(), 4, "one delivery, no retry");
}
