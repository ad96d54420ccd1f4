//! The in-process task queue and outbox: the reference the queue contract is written against, and what
//! service tests run consumers on. Nothing survives the process; the embedded default uses the SQLite queue.
//!
//! One partition per topic, so every record of a topic keeps its order. Each group keeps one committed offset per
//! topic; a consumer starts after it, and a consumer that does not commit goes on reading (as a Kafka consumer
//! does) until it is dropped and a new member starts again from the commit.

use async_trait::async_trait;
use palaver_core::ports::{Delivery, OutboxEntry, OutboxStore, QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
use palaver_core::{StoreResult, TenantId, now_millis};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::Notify;

/// The queue in process. Clones share the records.
#[derive(Clone, Default)]
pub struct MemoryQueue {
    state: Arc<Mutex<QueueState>>,
    /// Woken on every produce, so waiting consumers look again.
    produced: Arc<Notify>,
}

#[derive(Default)]
struct QueueState {
    records: HashMap<QueueTopic, Vec<QueueRecord>>,
    /// (group, topic) → offset of the next record the group has not committed.
    committed: HashMap<(String, QueueTopic), i64>,
}

impl MemoryQueue {
    pub fn new() -> MemoryQueue {
        MemoryQueue::default()
    }

    /// Every record produced to `topic`, in order (for tests).
    pub fn records(&self, topic: QueueTopic) -> Vec<QueueRecord> {
        self.state.lock().records.get(&topic).cloned().unwrap_or_default()
    }
}

#[async_trait]
impl TaskQueue for MemoryQueue {
    async fn produce(&self, record: QueueRecord) -> StoreResult<()> {
        self.state.lock().records.entry(record.topic).or_default().push(record);
        self.produced.notify_waiters();
        Ok(())
    }

    async fn subscribe(&self, topic: QueueTopic, group: &str) -> StoreResult<Box<dyn QueueConsumer>> {
        let next = self.state.lock().committed.get(&(group.to_owned(), topic)).copied().unwrap_or(0);
        Ok(Box::new(MemoryConsumer { queue: self.clone(), topic, group: group.to_owned(), next }))
    }
}

struct MemoryConsumer {
    queue: MemoryQueue,
    topic: QueueTopic,
    group: String,
    /// Offset of the next record this member reads.
    next: i64,
}

#[async_trait]
impl QueueConsumer for MemoryConsumer {
    async fn next(&mut self) -> StoreResult<Delivery> {
        loop {
            // Registered before looking, so a produce between the look and the wait is not missed.
            let produced = self.queue.produced.notified();
            let found = {
                let state = self.queue.state.lock();
                state.records.get(&self.topic).and_then(|r| r.get(self.next as usize)).cloned()
            };
            if let Some(record) = found {
                let delivery = Delivery { record, partition: 0, offset: self.next };
                self.next += 1;
                return Ok(delivery);
            }
            produced.await;
        }
    }

    async fn commit(&mut self, delivery: &Delivery) -> StoreResult<()> {
        let mut state = self.queue.state.lock();
        let at = state.committed.entry((self.group.clone(), self.topic)).or_insert(0);
        *at = (*at).max(delivery.offset + 1);
        Ok(())
    }

    fn buffered(&self) -> usize {
        let state = self.queue.state.lock();
        state.records.get(&self.topic).map_or(0, |r| r.len().saturating_sub(self.next as usize))
    }
}

/// The outbox in process: per tenant, entries in id order.
#[derive(Clone, Default)]
pub struct MemoryOutbox {
    state: Arc<Mutex<OutboxState>>,
}

#[derive(Default)]
struct OutboxState {
    next_id: i64,
    entries: HashMap<TenantId, BTreeMap<i64, OutboxEntry>>,
    /// Tenant → (relay owner, lease expiry in Unix ms).
    leases: HashMap<TenantId, (String, i64)>,
}

impl MemoryOutbox {
    pub fn new() -> MemoryOutbox {
        MemoryOutbox::default()
    }
}

#[async_trait]
impl OutboxStore for MemoryOutbox {
    async fn put(&self, tenant: TenantId, records: &[QueueRecord]) -> StoreResult<()> {
        let mut state = self.state.lock();
        let created_at = now_millis();
        for record in records {
            state.next_id += 1;
            let id = state.next_id;
            let entry = OutboxEntry { id, tenant, record: record.clone(), created_at };
            state.entries.entry(tenant).or_default().insert(id, entry);
        }
        Ok(())
    }

    async fn pending(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<OutboxEntry>> {
        let state = self.state.lock();
        Ok(state.entries.get(&tenant).map(|e| e.values().take(limit).cloned().collect()).unwrap_or_default())
    }

    async fn remove(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()> {
        if let Some(entries) = self.state.lock().entries.get_mut(&tenant) {
            for id in ids {
                entries.remove(id);
            }
        }
        Ok(())
    }

    async fn depth(&self, tenant: TenantId) -> StoreResult<u64> {
        Ok(self.state.lock().entries.get(&tenant).map_or(0, |e| e.len() as u64))
    }

    async fn lease(&self, tenant: TenantId, owner: &str, ttl_ms: i64) -> StoreResult<bool> {
        let now = now_millis();
        let mut state = self.state.lock();
        match state.leases.get(&tenant) {
            Some((holder, until)) if holder != owner && *until > now => Ok(false),
            _ => {
                state.leases.insert(tenant, (owner.to_owned(), now + ttl_ms));
                Ok(true)
            }
        }
    }
}
