//! The push worker with a push filter (`PushHook`): a delayed push waits in the store, capped at
//! `push.max_delay_ms`, while the worker goes on with the next task, and survives the worker stopping (another
//! worker sends it when due); a rewrite is what the provider gets.

mod harness;

use harness::{Client, basic, service_with_push_hook};
use palaver_core::TenantId;
use palaver_core::ports::{
    Device, NoHooks, OutboxStore, PushContext, PushDecision, PushError, PushHook, PushMessage, PushProvider,
    QueueTopic, TaskQueue,
};
use palaver_service::ServiceConfig;
use palaver_service::backbone::push::worker::{PushWorker, WorkerConfig};
use palaver_service::backbone::push::{push_records, push_tasks};
use palaver_store_memory::{MemoryOutbox, MemoryPushDedup, MemoryQueue};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Delays the first message's push by ten minutes (more than the cap) and rewrites the others'.
struct DelayFirst;

#[async_trait::async_trait]
impl PushHook for DelayFirst {
    async fn before_push(&self, ctx: &PushContext<'_>) -> PushDecision {
        if ctx.task.seq == 1 {
            return PushDecision::Delay { ms: 600_000, rewrite: None };
        }
        let mut m = ctx.message.clone();
        m.body = format!("rewritten {}", ctx.task.seq);
        PushDecision::Rewrite(m)
    }

    fn filters(&self, _: TenantId) -> bool {
        true
    }
}

/// A provider that records what it is sent, and when.
#[derive(Default)]
struct Recorder {
    got: Mutex<Vec<(String, String, Instant)>>,
}

#[async_trait::async_trait]
impl PushProvider for Recorder {
    fn name(&self) -> &'static str {
        "webhook"
    }

    async fn send(&self, _: TenantId, _: &Device, msg: &PushMessage) -> Result<(), PushError> {
        let seq = msg.data.get("seq").cloned().unwrap_or_default();
        self.got.lock().unwrap().push((seq, msg.body.clone(), Instant::now()));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_waits_in_the_store_capped_survives_a_stopped_worker_and_a_rewrite_is_sent() {
    let mut cfg = ServiceConfig::default();
    cfg.push.enabled = true;
    cfg.push.max_delay_ms = 300;
    let outbox = MemoryOutbox::new();
    let svc = service_with_push_hook(cfg, Arc::new(NoHooks), Arc::new(DelayFirst), outbox.clone());
    let recorder = Arc::new(Recorder::default());
    svc.use_push_providers(vec![recorder.clone() as Arc<dyn PushProvider>], None);
    let mut alice = Client::connect(&svc);
    alice.signup("alice", "secret123").await;
    let mut bob = Client::connect(&svc);
    bob.signup("bob", "secret123").await;
    let bob_id = bob.user.clone();
    bob.close().await;
    // Bob's phone registers at login, then goes offline.
    let mut phone = Client::connect(&svc);
    phone.req("hi", json!({ "ver": "0.25.3", "ua": "test/1.0", "dev": "bob-phone", "platf": "android" })).await;
    let (ctrl, _) = phone.req("login", json!({ "scheme": "basic", "secret": basic("bob", "secret123") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    phone.close().await;
    alice.sub(&bob_id).await;
    alice.publish(&bob_id, json!("first")).await;
    alice.publish(&bob_id, json!("second")).await;

    // The message tasks reach the outbox (the relay's job in a node); hand them to a queue the worker reads. The
    // silent push of Alice's P2P subscription is a task of its own and stays out: this test is about messages.
    let queue = MemoryQueue::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let message_tasks = |r: &palaver_core::ports::QueueRecord| {
        let tasks = if r.topic == QueueTopic::Push { push_tasks(&r.payload).unwrap() } else { Vec::new() };
        tasks.into_iter().filter(|t| t.what == "msg").collect::<Vec<_>>()
    };
    let tasks = loop {
        let pending = outbox.pending(TenantId::DEFAULT, 100).await.unwrap();
        let tasks: Vec<_> = pending.iter().flat_map(|e| message_tasks(&e.record)).collect();
        if tasks.len() == 2 {
            break tasks;
        }
        assert!(Instant::now() < deadline, "push tasks never reached the outbox");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    queue.produce_batch(push_records(tasks)).await.unwrap();
    let worker_cfg = WorkerConfig {
        group: "push".to_owned(),
        max_attempts: 1,
        backoff_initial: Duration::from_millis(10),
        backoff_max: Duration::from_millis(10),
    };
    let started = Instant::now();
    let dedup = Arc::new(MemoryPushDedup::new(100));
    let first = PushWorker::new(svc.clone(), Arc::new(queue), dedup.clone(), worker_cfg.clone());
    let first = first.spawn();
    let sent = |n: usize| {
        let recorder = recorder.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            while recorder.got.lock().unwrap().len() < n {
                assert!(Instant::now() < deadline, "pushes sent: {:?}", recorder.got.lock().unwrap());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    sent(1).await;
    // The worker stops with the delayed push still waiting; past its due time nothing sent it.
    first.abort();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(recorder.got.lock().unwrap().len(), 1, "{:?}", recorder.got.lock().unwrap());
    // Another worker (a restarted node, or any other) sends it from the store.
    let second = PushWorker::new(svc.clone(), Arc::new(MemoryQueue::new()), dedup, worker_cfg).spawn();
    sent(2).await;
    second.abort();
    let got = recorder.got.lock().unwrap().clone();
    assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("2", "rewritten 2"), "the second task went first: {got:?}");
    assert_eq!(got[1].0, "1", "the delayed push came after: {got:?}");
    assert!(got[0].2.duration_since(started) < Duration::from_millis(300), "the delay did not hold the queue");
    let waited = got[1].2.duration_since(started);
    assert!(waited >= Duration::from_millis(500) && waited < Duration::from_secs(5), "capped delay: {waited:?}");
    let state = svc.push_state();
    assert_eq!((state.filtered_count("delay"), state.filtered_count("rewrite")), (1, 1));
}
