//! The audit consumer: one consumer group across the nodes reads the `audit` topic and writes each event to its
//! tenant's `audit_log`.
//!
//! **Guarantee.** The queue offset is committed only after the row is stored, so a crash in between delivers the
//! event again; the row is keyed by the event id, so the repeat stores nothing (`AuditStore::record_audit`). A
//! transient store failure is retried with backoff without committing, so the partition waits rather than skips. A
//! record that does not decode, or that the store refuses for good (an unknown tenant), goes to the dead-letter
//! topic with the reason, partition and offset in its headers and is then committed: it never stalls the topic.

use super::Backbone;
use palaver_core::ports::{AuditEvent, AuditStore, Delivery, QueueConsumer, QueueTopic, TaskQueue};
use palaver_core::{StoreError, StoreResult};
use std::sync::Arc;
use std::time::Duration;

/// The longest wait between retries of a failing store or queue.
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The audit topic's consumer.
pub struct AuditConsumer {
    queue: Arc<dyn TaskQueue>,
    store: Arc<dyn AuditStore>,
    state: Arc<Backbone>,
    group: String,
}

impl AuditConsumer {
    /// A consumer in group `group` (every node uses the same one).
    pub fn new(queue: Arc<dyn TaskQueue>, store: Arc<dyn AuditStore>, state: Arc<Backbone>, group: String) -> Self {
        AuditConsumer { queue, store, state, group }
    }

    /// Consumes until the task is aborted, joining the group again after a queue failure.
    pub async fn run(self) {
        super::keep_consuming("audit consumer", &self.group, || self.consume()).await;
    }

    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }

    async fn consume(&self) -> StoreResult<()> {
        let mut consumer = self.queue.subscribe(QueueTopic::Audit, &self.group).await?;
        loop {
            let delivery = consumer.next().await?;
            self.handle(&delivery).await?;
            commit(&mut consumer, &delivery).await;
        }
    }

    /// Stores one delivery's event (retrying transient failures) or dead-letters it.
    async fn handle(&self, delivery: &Delivery) -> StoreResult<()> {
        let event: AuditEvent = match serde_json::from_slice(&delivery.record.payload) {
            Ok(e) => e,
            Err(err) => {
                self.state.audit_invalid.inc_by(1);
                return self.dead_letter(delivery, &format!("not an audit event: {err}")).await;
            }
        };
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.store.record_audit(event.tenant, &event).await {
                Ok(true) => {
                    self.state.audit_stored.inc_by(1);
                    return Ok(());
                }
                Ok(false) => {
                    self.state.audit_repeats.inc_by(1);
                    return Ok(());
                }
                Err(StoreError::Unavailable(err)) => {
                    tracing::warn!(%err, tenant = %event.tenant, "audit_log unavailable; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
                Err(err) => return self.dead_letter(delivery, &format!("audit_log refused the event: {err}")).await,
            }
        }
    }

    async fn dead_letter(&self, delivery: &Delivery, reason: &str) -> StoreResult<()> {
        tracing::warn!(reason, offset = delivery.offset, "audit record sent to the dead-letter topic");
        self.queue.produce(delivery.dead_letter(reason)).await
    }
}

/// Commits, logging a failure: the record then comes again and is stored once anyway.
async fn commit(consumer: &mut Box<dyn QueueConsumer>, delivery: &Delivery) {
    if let Err(err) = consumer.commit(delivery).await {
        tracing::warn!(%err, offset = delivery.offset, "audit consumer: commit failed; the event will repeat");
    }
}
