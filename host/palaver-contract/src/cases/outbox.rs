//! Contract cases for the outbox and its relay lease: entries pending in write order, tenants isolated, removal,
//! depth, and a lease held by one owner at a time. [`crate::outbox_contract_tests!`] runs them against any
//! `OutboxStore`.

use crate::Fixture;
use palaver_core::ports::{OutboxStore, QueueRecord, QueueTopic};

pub(super) fn record(key: &str, payload: &str) -> QueueRecord {
    QueueRecord {
        topic: QueueTopic::Audit,
        key: key.to_owned(),
        headers: vec![("n".into(), payload.into())],
        payload: payload.as_bytes().to_vec(),
    }
}

pub(super) fn payloads(entries: &[palaver_core::ports::OutboxEntry]) -> Vec<String> {
    entries.iter().map(|e| String::from_utf8(e.record.payload.clone()).unwrap()).collect()
}

/// Entries come back oldest first, across puts, with rising ids and the records as written.
pub async fn outbox_pending_in_write_order<S: OutboxStore>(f: Fixture<S>) {
    let s = &f.store;
    s.put(f.tenant, &[record("k", "1"), record("k", "2")]).await.unwrap();
    s.put(f.tenant, &[record("j", "3")]).await.unwrap();
    s.put(f.tenant, &[]).await.unwrap();
    let got = s.pending(f.tenant, 10).await.unwrap();
    assert_eq!(payloads(&got), ["1", "2", "3"]);
    assert!(got.windows(2).all(|w| w[0].id < w[1].id), "ids rise in write order");
    assert!(got.iter().all(|e| e.tenant == f.tenant && e.created_at > 0));
    assert_eq!(got[2].record, record("j", "3"));
    assert_eq!(payloads(&s.pending(f.tenant, 2).await.unwrap()), ["1", "2"], "the limit keeps the oldest");
}

/// One tenant's entries are invisible to another's calls, including removal by id.
pub async fn outbox_tenants_are_isolated<S: OutboxStore>(f: Fixture<S>) {
    let s = &f.store;
    s.put(f.tenant, &[record("k", "mine")]).await.unwrap();
    s.put(f.other_tenant, &[record("k", "theirs")]).await.unwrap();
    let mine = s.pending(f.tenant, 10).await.unwrap();
    assert_eq!(payloads(&mine), ["mine"]);
    assert_eq!(payloads(&s.pending(f.other_tenant, 10).await.unwrap()), ["theirs"]);
    let theirs = s.pending(f.other_tenant, 10).await.unwrap();
    s.remove(f.tenant, &[theirs[0].id]).await.unwrap();
    assert_eq!(s.depth(f.other_tenant).await.unwrap(), 1, "removal names the tenant");
}

/// Removed entries are gone; others stay in order; removing an unknown id is harmless.
pub async fn outbox_remove_and_depth<S: OutboxStore>(f: Fixture<S>) {
    let s = &f.store;
    assert_eq!(s.depth(f.tenant).await.unwrap(), 0);
    s.put(f.tenant, &[record("k", "1"), record("k", "2"), record("k", "3")]).await.unwrap();
    assert_eq!(s.depth(f.tenant).await.unwrap(), 3);
    let got = s.pending(f.tenant, 10).await.unwrap();
    s.remove(f.tenant, &[got[0].id, got[1].id, i64::MAX]).await.unwrap();
    s.remove(f.tenant, &[]).await.unwrap();
    assert_eq!(payloads(&s.pending(f.tenant, 10).await.unwrap()), ["3"]);
    assert_eq!(s.depth(f.tenant).await.unwrap(), 1);
    s.put(f.tenant, &[record("k", "4")]).await.unwrap();
    assert_eq!(payloads(&s.pending(f.tenant, 10).await.unwrap()), ["3", "4"]);
}

/// The lease has one owner at a time, is renewed by its owner, passes on once expired, and is per tenant.
pub async fn outbox_lease_one_owner<S: OutboxStore>(f: Fixture<S>) {
    let s = &f.store;
    assert!(s.lease(f.tenant, "node-a", 60_000).await.unwrap());
    assert!(s.lease(f.tenant, "node-a", 60_000).await.unwrap(), "its owner renews it");
    assert!(!s.lease(f.tenant, "node-b", 60_000).await.unwrap(), "held by node-a");
    assert!(s.lease(f.other_tenant, "node-b", 60_000).await.unwrap(), "another tenant's lease is separate");
    assert!(s.lease(f.tenant, "node-a", 1).await.unwrap(), "node-a shortens it to 1 ms");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(s.lease(f.tenant, "node-b", 60_000).await.unwrap(), "an expired lease passes on");
    assert!(!s.lease(f.tenant, "node-a", 60_000).await.unwrap());
}
