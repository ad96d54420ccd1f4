//! The outbox relay: one background task per node that moves every tenant's outbox entries to the task queue in id
//! order, then deletes them. The queue down ⇒ the batch is retried with backoff while the outbox grows (within
//! `outbox.max_depth`) and chat goes on; once the queue is back the backlog drains oldest first.
//!
//! **Guarantees.** At least once: an entry is deleted only after the queue acknowledged it durably, so a crash or a
//! failed delete produces it again (every consumer is idempotent by the record's own id). In order per tenant: only
//! the holder of the tenant's lease (`OutboxStore::lease`, renewed before every batch) produces its entries, and it
//! produces a batch in id order, awaiting the queue's acknowledgement before the next batch. The lease outlives a
//! batch's produce (each is bounded by the queue's delivery timeout, which must stay below `outbox.lease_ms`), so a
//! second node sharing the tenant's database takes over only after the holder stopped renewing for a whole lease.

use super::Backbone;
use palaver_core::ports::{OutboxStore, TaskQueue, TenantStore};
use palaver_core::{StoreResult, TenantId};
use std::sync::Arc;
use std::time::Duration;

/// The relay's settings (`[outbox]`).
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Who holds the lease: the node id.
    pub owner: String,
    /// Entries read and produced per batch.
    pub batch: usize,
    /// How often every tenant's outbox is looked at when nothing wakes the relay.
    pub interval: Duration,
    /// The longest wait between retries while the queue refuses.
    pub backoff_max: Duration,
    /// How long a lease lasts without renewal.
    pub lease: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            owner: "local".into(),
            batch: 500,
            interval: Duration::from_millis(1000),
            backoff_max: Duration::from_secs(5),
            lease: Duration::from_secs(30),
        }
    }
}

/// The relay over one outbox store and one queue.
#[derive(Clone)]
pub struct Relay {
    outbox: Arc<dyn OutboxStore>,
    queue: Arc<dyn TaskQueue>,
    /// The registry to list tenants from; `None`: the embedded default's one tenant.
    tenants: Option<Arc<dyn TenantStore>>,
    state: Arc<Backbone>,
    cfg: RelayConfig,
}

/// What one pass over the tenants did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub produced: u64,
    /// A tenant's batch failed: the next pass waits for the backoff.
    pub failed: bool,
    /// A tenant had a full batch: the next pass starts right away.
    pub more: bool,
}

impl Relay {
    pub fn new(
        outbox: Arc<dyn OutboxStore>,
        queue: Arc<dyn TaskQueue>,
        tenants: Option<Arc<dyn TenantStore>>,
        state: Arc<Backbone>,
        cfg: RelayConfig,
    ) -> Relay {
        Relay { outbox, queue, tenants, state, cfg }
    }

    async fn tenant_ids(&self) -> StoreResult<Vec<TenantId>> {
        super::active_tenants(self.tenants.as_deref()).await
    }

    /// One pass: for every tenant whose lease this node holds, one batch produced and deleted.
    pub async fn pass(&self) -> Pass {
        let mut pass = Pass::default();
        let tenants = match self.tenant_ids().await {
            Ok(t) => t,
            Err(err) => {
                tracing::warn!(%err, "the relay cannot list tenants");
                pass.failed = true;
                return pass;
            }
        };
        for tenant in tenants {
            match self.relay_tenant(tenant).await {
                Ok((n, full)) => {
                    pass.produced += n;
                    pass.more |= full;
                }
                Err(err) => {
                    tracing::warn!(%tenant, %err, "outbox relay: the batch is retried with backoff");
                    pass.failed = true;
                }
            }
        }
        pass
    }

    /// Relays one batch of `tenant`: how many entries were produced, and whether the batch was full.
    async fn relay_tenant(&self, tenant: TenantId) -> StoreResult<(u64, bool)> {
        // An empty outbox (the common case) costs one read and no lease write.
        if self.outbox.pending(tenant, 1).await?.is_empty() {
            self.state.set_depth(tenant, 0);
            return Ok((0, false));
        }
        let ttl = self.cfg.lease.as_millis() as i64;
        if !self.outbox.lease(tenant, &self.cfg.owner, ttl).await? {
            // Another node relays this tenant; the count keeps this node's bound check current.
            self.state.set_depth(tenant, self.outbox.depth(tenant).await?);
            return Ok((0, false));
        }
        // Read under the lease, so the batch is what the previous holder left.
        let entries = self.outbox.pending(tenant, self.cfg.batch).await?;
        if entries.is_empty() {
            self.state.set_depth(tenant, 0);
            return Ok((0, false));
        }
        let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
        let records = entries.into_iter().map(|e| e.record).collect();
        // In id order; deleted only once all are durable (a failure leaves them all for the next try).
        if let Err(err) = self.queue.produce_batch(records).await {
            self.state.produce_failures.inc_by(1);
            if let Ok(depth) = self.outbox.depth(tenant).await {
                self.state.set_depth(tenant, depth);
            }
            return Err(err);
        }
        self.state.produced.inc_by(ids.len() as u64);
        self.outbox.remove(tenant, &ids).await?;
        let depth = self.outbox.depth(tenant).await?;
        self.state.set_depth(tenant, depth);
        Ok((ids.len() as u64, ids.len() >= self.cfg.batch))
    }

    /// Runs passes until the task is aborted: right away while there is more, after the interval (or a local
    /// write) when idle, after a growing backoff while the queue refuses.
    pub async fn run(self) {
        let mut backoff = Duration::from_millis(100);
        loop {
            let pass = self.pass().await;
            if pass.failed {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(self.cfg.backoff_max);
                continue;
            }
            backoff = Duration::from_millis(100);
            if pass.more {
                continue;
            }
            let _ = tokio::time::timeout(self.cfg.interval, self.state.written.notified()).await;
        }
    }

    /// Starts [`Relay::run`] on the runtime; abort the handle to stop it.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }
}
