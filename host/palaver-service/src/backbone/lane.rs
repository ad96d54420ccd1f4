//! A lane from a hot path to the task queue: a bounded buffer the path offers to without waiting, drained in
//! batches into the tenants' outboxes (from where the relay produces them), or straight into a queue that is
//! down only when the store is ([`crate::Service::queue_through`]). Push tasks and plugin events each have one.
//! The hot path never awaits any of this: a full buffer drops the item and counts it.

use crate::Inner;
use palaver_core::TenantId;
use palaver_core::ports::{QueueRecord, TaskQueue};
use prometheus_client::metrics::counter::Counter;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::mpsc;

/// Items moved from a buffer to the outbox in one write at most.
const DRAIN_BATCH: usize = 256;

/// How long the drain waits for more items after the first of a batch, as a Kafka producer's `linger.ms`: under
/// load one write then carries many items instead of about one, and an item leaves this much later at most.
const DRAIN_LINGER: std::time::Duration = std::time::Duration::from_millis(2);

/// What travels a lane: it knows the records a batch of its kind becomes.
pub(crate) trait Queued: Send + Sized + 'static {
    /// The records a drained batch becomes, in order: one per item (plugin events), or several items per record
    /// (push tasks).
    fn pack(items: std::vec::Drain<'_, Self>) -> Vec<Packed>;
}

/// A record made of one or more items of a lane, and its tenant.
pub(crate) struct Packed {
    pub(crate) tenant: TenantId,
    pub(crate) record: QueueRecord,
    /// How many items it carries: what is counted as dropped if it is lost.
    pub(crate) items: u64,
}

/// A lane's sending end and its counters.
pub(crate) struct Lane<T> {
    tx: mpsc::Sender<T>,
    /// The queue the buffer drains into directly; unset: through the tenant's outbox and the relay.
    pub(crate) direct: OnceLock<Arc<dyn TaskQueue>>,
    /// Items that reached the buffer.
    pub(crate) offered: Counter,
    /// Items lost: the buffer was full, or the outbox (or the queue) refused them.
    pub(crate) dropped: Counter,
}

impl<T: Queued> Lane<T> {
    /// A lane holding `capacity` items at most, and the receiver its [`drain`] takes.
    pub(crate) fn new(capacity: usize) -> (Lane<T>, mpsc::Receiver<T>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let lane = Lane { tx, direct: OnceLock::new(), offered: Counter::default(), dropped: Counter::default() };
        (lane, rx)
    }

    /// Offers an item to the buffer; a full buffer drops it (counted).
    pub(crate) fn offer(&self, item: T) {
        match self.tx.try_send(item) {
            Ok(()) => self.offered.inc(),
            Err(_) => self.dropped.inc(),
        };
    }
}

/// Moves a lane's buffered items into their tenants' outboxes, or straight into the lane's direct queue, until
/// the service is dropped. `lane` finds the lane in the service; `what` names the items in logs.
pub(crate) async fn drain<T: Queued>(
    inner: Weak<Inner>,
    mut rx: mpsc::Receiver<T>,
    lane: fn(&Inner) -> &Lane<T>,
    what: &'static str,
) {
    let mut batch = Vec::with_capacity(DRAIN_BATCH);
    while rx.recv_many(&mut batch, DRAIN_BATCH).await > 0 {
        if batch.len() < DRAIN_BATCH {
            tokio::time::sleep(DRAIN_LINGER).await;
            while batch.len() < DRAIN_BATCH
                && let Ok(item) = rx.try_recv()
            {
                batch.push(item);
            }
        }
        let Some(inner) = inner.upgrade() else { return };
        let lane = lane(&inner);
        if let Some(queue) = lane.direct.get() {
            // Every tenant's items in one produce: on the embedded queue that is one statement on its file's one
            // writer per batch rather than per item.
            let n = batch.len();
            let records: Vec<QueueRecord> = T::pack(batch.drain(..)).into_iter().map(|p| p.record).collect();
            if let Err(err) = queue.produce_batch(records).await {
                lane.dropped.inc_by(n as u64);
                tracing::warn!(%err, items = n, what, "records not written to the queue");
            }
            continue;
        }
        let mut by_tenant: BTreeMap<TenantId, (Vec<QueueRecord>, u64)> = BTreeMap::new();
        for packed in T::pack(batch.drain(..)) {
            let (records, items) = by_tenant.entry(packed.tenant).or_default();
            records.push(packed.record);
            *items += packed.items;
        }
        for (tenant, (records, items)) in by_tenant {
            if let Err(err) = inner.put_outbox(tenant, &records).await {
                lane.dropped.inc_by(items);
                tracing::warn!(%tenant, %err, items, what, "records not written to the outbox");
            }
        }
    }
}

impl crate::Service {
    /// Hands push tasks and plugin events straight to `queue` rather than to the tenant's outbox and the relay.
    /// Only for a queue that is down only when the store is (the embedded queue, in a file beside the
    /// store's): the outbox exists so that a queue outage loses nothing and chat goes on, which such a queue never
    /// needs, and through it every item would cost the store's one writer two more writes (the outbox row and its
    /// delete) plus the relay's lease and reads, on top of the queue row. These items commit with nothing else
    /// either way: they are made after their message is stored.
    pub fn queue_through(&self, queue: Arc<dyn TaskQueue>) {
        let inner = &self.inner;
        if inner.push.lane.direct.set(queue.clone()).is_err() || inner.events.lane.direct.set(queue).is_err() {
            tracing::warn!("push tasks and plugin events already go straight to a queue; the second one is ignored");
        }
    }
}
