//! The service's side of the task queue: records it owes (audit events, summaries) go to the tenant's outbox,
//! never straight to the queue, so the queue being down delays them and loses none and no chat path waits on it.
//! [`relay`] moves the outbox to the queue; [`audit`] consumes the audit topic into the tenant's `audit_log`;
//! [`push`] makes push tasks after a message is stored and its worker pushes devices; [`events`] does the same
//! for the listening plugins (stored messages, account changes) and its worker delivers them; [`scan`] settles
//! pending uploads from the file-security tasks. Push tasks and message events leave the publish path through a
//! [`lane`].

pub mod audit;
pub mod events;
pub(crate) mod lane;
pub mod push;
pub mod relay;
pub mod scan;
mod state;
mod summary;

pub use state::Backbone;
pub use summary::Summary;

use crate::{Inner, Service};
use palaver_core::ports::{AuditEvent, QueueRecord, QueueTopic, TenantStore};
use palaver_core::{StoreError, StoreResult, TenantId, TenantState, now_millis};

/// The tenants a node's background tasks (the relay, the delayed pushes, the call sweep) go through: every
/// active tenant of the registry, or the default tenant alone without one (the embedded mode).
pub async fn active_tenants(registry: Option<&dyn TenantStore>) -> StoreResult<Vec<TenantId>> {
    match registry {
        None => Ok(vec![TenantId::DEFAULT]),
        Some(registry) => Ok(registry
            .list_tenants()
            .await?
            .into_iter()
            .filter(|t| t.state == TenantState::Active)
            .map(|t| t.id)
            .collect()),
    }
}

/// The longest wait before a consumer joins its group again after a queue failure.
const REJOIN_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs a consumer's `consume` until it returns `Ok` or its task is aborted, joining the group again after each
/// queue failure with a growing wait. `what` and `group` name it in the log.
pub(crate) async fn keep_consuming<F, Fut>(what: &str, group: &str, mut consume: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<()>>,
{
    let mut backoff = std::time::Duration::from_millis(100);
    while let Err(err) = consume().await {
        tracing::warn!(%err, group, "{what}: the queue failed; joining again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(REJOIN_MAX);
    }
}

/// A fresh event id: 128 random bits in hex, unique without coordination between nodes.
pub fn new_event_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// An audit event of this node's: a fresh id, now.
pub(crate) fn audit_event(
    tenant: TenantId,
    action: &str,
    actor: (&str, Option<i64>),
    target: (&str, String),
) -> AuditEvent {
    AuditEvent::new(new_event_id(), tenant, action, actor, target, now_millis())
}

/// The record an audit event travels in: keyed by tenant and target, so one target's events keep their order.
pub fn audit_record(event: &AuditEvent) -> QueueRecord {
    let key = format!("{}:{}:{}", event.tenant.0, event.target_kind, event.target_id);
    let payload = serde_json::to_vec(event).unwrap_or_default();
    let mut record = QueueRecord::new(QueueTopic::Audit, key, payload);
    record.headers = vec![
        ("tenant".to_owned(), event.tenant.0.to_string()),
        ("event_id".to_owned(), event.event_id.clone()),
        ("action".to_owned(), event.action.clone()),
    ];
    record
}

impl Inner {
    /// Writes records to the tenant's outbox. A failure is logged and counted, never passed to the action that
    /// owed the records: the action has happened, and failing it now would not undo it.
    pub(crate) async fn owe(&self, tenant: TenantId, records: &[QueueRecord]) {
        if let Err(err) = self.put_outbox(tenant, records).await {
            tracing::warn!(%tenant, %err, records = records.len(), "records owed to the queue were not written");
        }
    }

    /// Writes records to the tenant's outbox within its bound (`outbox.max_depth`), and wakes the relay.
    pub(crate) async fn put_outbox(&self, tenant: TenantId, records: &[QueueRecord]) -> StoreResult<()> {
        if !self.backbone.admit(tenant, records.len()) {
            return Err(StoreError::Unavailable("the tenant's outbox is full".into()));
        }
        match self.ports.outbox.put(tenant, records).await {
            Ok(()) => {
                self.backbone.written.notify_one();
                Ok(())
            }
            Err(err) => {
                self.backbone.write_failures.inc_by(records.len() as u64);
                Err(err)
            }
        }
    }

    /// What a state change may carry into its own transaction (the audit event and summaries it owes): `records`
    /// while the tenant's outbox has room (counted now), none when it is at `outbox.max_depth` (refused, counted
    /// and warned about, as [`Inner::put_outbox`] does). The state change itself is never refused for it. Call
    /// [`Inner::owed_written`] after the write.
    pub(crate) fn owed<'a>(&self, tenant: TenantId, records: &'a [QueueRecord]) -> &'a [QueueRecord] {
        if self.owes(tenant, records.len()) { records } else { &[] }
    }

    /// [`Inner::owed`] for `n` records the store builds inside its transaction: whether it may write them.
    pub(crate) fn owes(&self, tenant: TenantId, n: usize) -> bool {
        self.backbone.admit(tenant, n)
    }

    /// Wakes the relay after a state change committed records it owed.
    pub(crate) fn owed_written(&self) {
        self.backbone.written.notify_one();
    }

    /// Audits an action of this node: an event with a fresh id, now.
    pub(crate) async fn audit_action(
        &self,
        tenant: TenantId,
        action: &str,
        actor: (&str, Option<i64>),
        target: (&str, String),
        build: impl FnOnce(AuditEvent) -> AuditEvent,
    ) {
        let event = build(audit_event(tenant, action, actor, target));
        self.owe(tenant, &[audit_record(&event)]).await;
    }
}

impl Service {
    /// Records `event` for the audit log: written to the tenant's outbox (topic `audit`), relayed to the queue,
    /// and stored in `audit_log` by the audit consumer, at most once per `event.event_id`. `Ok` once the outbox
    /// holds it. Build the event with [`AuditEvent::new`] and an id from [`new_event_id`]; `event.tenant` should
    /// be `tenant`. `Unavailable` when the outbox store fails or the tenant's outbox is at `outbox.max_depth`.
    pub async fn audit(&self, tenant: TenantId, event: AuditEvent) -> StoreResult<()> {
        self.inner.put_outbox(tenant, &[audit_record(&event)]).await
    }

    /// Sends a summary of a state change to the Admin side (topic `admin_event`) through the tenant's outbox.
    pub async fn summarize(&self, tenant: TenantId, summary: Summary) -> StoreResult<()> {
        self.inner.put_outbox(tenant, &[summary.record(tenant)]).await
    }

    /// The node's outbox bookkeeping, for the relay and the audit consumer.
    pub fn backbone(&self) -> std::sync::Arc<Backbone> {
        self.inner.backbone.clone()
    }
}
