//! The publish pipeline over a store that commits later, in whatever order the test says: a session reads its
//! next frame while its messages commit, acks and fanout follow seq order whichever commit finishes first, a
//! failed commit acknowledges nothing and holds up nothing, and a session's publishes in flight are bounded.

mod harness;

use async_trait::async_trait;
use harness::{Client, data, service_over_messages};
use palaver_core::ports::{MessageStore, OwedFor, PendingAppend};
use palaver_core::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, StoreError, StoreResult,
    TenantId, UserId,
};
use palaver_service::ServiceConfig;
use palaver_store_memory::MemoryStore;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// History whose queued appends commit (or fail) only when the test releases their seq, and whose stored
/// maximum can be held back.
struct Gated {
    inner: Arc<MemoryStore>,
    waiting: Mutex<BTreeMap<Seq, oneshot::Sender<bool>>>,
    floor: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
}

impl Gated {
    fn new(inner: Arc<MemoryStore>) -> Arc<Self> {
        Arc::new(Gated { inner, waiting: Mutex::new(BTreeMap::new()), floor: Mutex::new(None) })
    }

    /// Makes `max_seq` wait until the returned sender says `true`.
    fn hold_floor(&self) -> tokio::sync::watch::Sender<bool> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        *self.floor.lock().unwrap() = Some(rx);
        tx
    }

    /// The seqs queued and not yet released.
    fn queued(&self) -> Vec<Seq> {
        self.waiting.lock().unwrap().keys().copied().collect()
    }

    /// Commits (`ok`) or fails the queued append of `seq`.
    fn release(&self, seq: Seq, ok: bool) {
        let gate = self.waiting.lock().unwrap().remove(&seq).expect("that seq is queued");
        gate.send(ok).expect("its publish waits");
    }

    /// Waits until `n` appends are queued.
    async fn until_queued(&self, n: usize) {
        for _ in 0..200 {
            if self.queued().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{n} appends were never queued; queued: {:?}", self.queued());
    }
}

#[async_trait]
impl MessageStore for Gated {
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        self.inner.append(tenant, msg).await
    }
    async fn queue_append(&self, tenant: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        let (gate, released) = oneshot::channel();
        self.waiting.lock().unwrap().insert(msg.seq, gate);
        let (inner, msg) = (self.inner.clone(), msg.clone());
        Ok(PendingAppend::new(async move {
            match released.await {
                Ok(true) => inner.append(tenant, &msg).await,
                _ => Err(StoreError::Unavailable("the commit failed".into())),
            }
        }))
    }
    async fn find_by_client_mid(&self, t: TenantId, topic: &str, from: UserId, mid: &str) -> StoreResult<Option<Seq>> {
        self.inner.find_by_client_mid(t, topic, from, mid).await
    }
    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq> {
        let held = self.floor.lock().unwrap().clone();
        if let Some(mut released) = held {
            released.wait_for(|r| *r).await.expect("the test holds the sender");
        }
        self.inner.max_seq(tenant, topic).await
    }
    async fn list_messages(&self, t: TenantId, topic: &str, r: UserId, q: &MessageQuery) -> StoreResult<Vec<Message>> {
        self.inner.list_messages(t, topic, r, q).await
    }
    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        self.inner.delete_messages(tenant, topic, request).await
    }
    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        self.inner.set_audit(tenant, topic, seq, audit, owed).await
    }
    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        self.inner.list_deletions(tenant, topic, reader).await
    }
}

/// A group with its owner (who publishes) and one attached reader, over gated history.
async fn setup(cfg: ServiceConfig) -> (Arc<Gated>, Client, Client, String) {
    let (gated, owner, reader, grp, _) = setup_service(cfg).await;
    (gated, owner, reader, grp)
}

/// [`setup`], with the service.
async fn setup_service(cfg: ServiceConfig) -> (Arc<Gated>, Client, Client, String, palaver_service::Service) {
    let gated = Arc::new(std::sync::OnceLock::new());
    let slot = gated.clone();
    let svc = service_over_messages(cfg, move |store| {
        let g = Gated::new(store);
        slot.set(g.clone()).ok();
        g
    });
    let gated = gated.get().expect("built").clone();
    let mut owner = Client::connect(&svc);
    owner.signup("owner", "pass123").await;
    let grp = owner.new_group("Pipelined").await;
    let mut reader = Client::connect(&svc);
    reader.signup("reader", "pass123").await;
    assert_eq!(reader.sub(&grp).await["code"], 200);
    owner.drain();
    reader.drain();
    (gated, owner, reader, grp, svc)
}

/// The count and sum (seconds) of `palaver_request_duration_seconds{kind="pub"}`.
fn pub_durations(svc: &palaver_service::Service) -> (u64, f64) {
    let text = svc.render_metrics();
    let value = |name: &str| {
        let prefix = format!("palaver_request_duration_seconds_{name}{{kind=\"pub\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    (value("count") as u64, value("sum"))
}

fn publish(id: &str, topic: &str, text: &str) -> Value {
    json!({ "pub": { "id": id, "topic": topic, "content": text } })
}

/// The ctrl frames among `frames`, as (id, code, seq).
fn ctrls(frames: &[Value]) -> Vec<(String, i64, Option<i64>)> {
    frames
        .iter()
        .filter_map(|f| f.get("ctrl"))
        .map(|c| (c["id"].as_str().unwrap_or("").to_owned(), c["code"].as_i64().unwrap(), c["params"]["seq"].as_i64()))
        .collect()
}

#[tokio::test]
async fn acks_and_fanout_keep_seq_order_whichever_commit_finishes_first() {
    let (gated, mut owner, mut reader, grp, svc) = setup_service(ServiceConfig::default()).await;
    // Both requests return while their rows wait for the commit: the session reads on.
    assert!(ctrls(&owner.send(publish("a", &grp, "first")).await).is_empty());
    assert!(ctrls(&owner.send(publish("b", &grp, "second")).await).is_empty());
    gated.until_queued(2).await;
    assert_eq!(gated.queued(), vec![1, 2]);
    // The later one commits first; it is neither acknowledged nor delivered before the earlier one settled.
    gated.release(2, true);
    assert!(owner.collect(100).await.is_empty(), "seq 2 waits for seq 1");
    assert!(reader.collect(0).await.is_empty());
    gated.release(1, true);
    let (_, mut frames) = owner.wait_for("the second ack", |f| f["ctrl"]["id"] == "b").await;
    frames.extend(owner.drain());
    let (last, mut got) = reader.wait_for("seq 2", |f| f["data"]["seq"] == 2).await;
    got.push(last);
    let seqs: Vec<i64> = data(&got).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert_eq!(ctrls(&frames), vec![("a".to_owned(), 202, Some(1))]);
    // A publish is timed up to its ack, not to the return of its request: both waited over 100 ms here.
    let (count, sum) = pub_durations(&svc);
    assert_eq!(count, 2);
    assert!(sum >= 0.2, "the publish durations add up to {sum} s");
}

/// The count and sum of `palaver_seq_run_messages`: allocations, and messages they gave seqs to.
fn seq_runs(svc: &palaver_service::Service) -> (u64, u64) {
    let text = svc.render_metrics();
    let value = |name: &str| {
        let prefix = format!("palaver_seq_run_messages_{name} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    (value("count") as u64, value("sum") as u64)
}

#[tokio::test]
async fn messages_admitted_while_a_seq_is_being_allocated_take_the_next_run_together() {
    let (gated, mut owner, mut reader, grp, svc) = setup_service(ServiceConfig::default()).await;
    // The topic's first allocation needs the stored maximum; held back, it keeps the first message waiting.
    let floor = gated.hold_floor();
    for id in ["a", "b", "c", "d"] {
        // Each request returns before its message has a seq: the session reads on.
        assert!(ctrls(&owner.send(publish(id, &grp, id)).await).is_empty());
    }
    assert!(gated.queued().is_empty(), "nothing has a seq yet");
    floor.send(true).unwrap();
    gated.until_queued(4).await;
    assert_eq!(gated.queued(), vec![1, 2, 3, 4], "admission order is seq order");
    // "a" took a run of its own; "b", "c" and "d", admitted meanwhile, one run together.
    assert_eq!(seq_runs(&svc), (2, 4));
    for seq in [4, 2, 3, 1] {
        gated.release(seq, true);
    }
    let (_, mut frames) = owner.wait_for("the last ack", |f| f["ctrl"]["id"] == "d").await;
    frames.extend(owner.drain());
    let acks: Vec<(String, i64, Option<i64>)> =
        ["a", "b", "c", "d"].iter().zip(1..).map(|(id, seq)| (id.to_string(), 202, Some(seq))).collect();
    let got: Vec<_> = ctrls(&frames);
    assert_eq!(got, acks[..3].to_vec(), "acks in seq order (the last one was waited for above)");
    let (last, mut got) = reader.wait_for("seq 4", |f| f["data"]["seq"] == 4).await;
    got.push(last);
    let seqs: Vec<i64> = data(&got).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn a_failed_commit_acknowledges_nothing_and_holds_up_nothing() {
    let (gated, mut owner, mut reader, grp) = setup(ServiceConfig::default()).await;
    owner.send(publish("a", &grp, "lost")).await;
    owner.send(publish("b", &grp, "kept")).await;
    gated.until_queued(2).await;
    gated.release(2, true);
    gated.release(1, false);
    let (ack, before) = owner.wait_for("the ack of b", |f| f["ctrl"]["id"] == "b").await;
    // The failure is answered first, in seq order, with a retryable code; the later message is acknowledged.
    let failed = ctrls(&before);
    assert_eq!(failed.len(), 1, "{before:?}");
    assert_eq!((failed[0].0.as_str(), failed[0].1), ("a", 503));
    assert_eq!(ack["ctrl"]["params"]["seq"], 2);
    let (last, _) = reader.wait_for("seq 2", |f| f["data"].is_object()).await;
    assert_eq!(last["data"]["seq"], 2, "the failed message reaches nobody");
    // The next message takes the next seq; history holds exactly what was acknowledged.
    owner.send(publish("c", &grp, "after")).await;
    gated.until_queued(1).await;
    assert_eq!(gated.queued(), vec![3]);
    gated.release(3, true);
    let (ack, _) = owner.wait_for("the ack of c", |f| f["ctrl"]["id"] == "c").await;
    assert_eq!(ack["ctrl"]["params"]["seq"], 3);
    let (_, frames) = owner.req("get", json!({ "topic": grp, "what": "data" })).await;
    let mut stored: Vec<i64> = data(&frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    stored.sort_unstable();
    // The live echo of seq 3 may come along with the page.
    stored.dedup();
    assert_eq!(stored, vec![2, 3]);
}

#[tokio::test]
async fn a_session_waits_for_room_beyond_its_publishes_in_flight() {
    let cfg = ServiceConfig { max_publishes_in_flight: 2, ..ServiceConfig::default() };
    let (gated, mut owner, _reader, grp) = setup(cfg).await;
    owner.send(publish("a", &grp, "one")).await;
    owner.send(publish("b", &grp, "two")).await;
    gated.until_queued(2).await;
    // The third is not read on while two wait for their commit.
    let third = tokio::time::timeout(Duration::from_millis(100), owner.send(publish("c", &grp, "three"))).await;
    assert!(third.is_err(), "a third publish went ahead of the bound");
    assert_eq!(gated.queued(), vec![1, 2]);
    gated.release(1, true);
    owner.wait_for("the ack of a", |f| f["ctrl"]["id"] == "a").await;
    owner.send(publish("c", &grp, "three")).await;
    gated.until_queued(2).await;
    assert_eq!(gated.queued(), vec![2, 3]);
    gated.release(2, true);
    gated.release(3, true);
    owner.wait_for("the ack of c", |f| f["ctrl"]["id"] == "c").await;
}
