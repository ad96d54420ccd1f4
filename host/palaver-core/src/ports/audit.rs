//! The audit trail: who did what to which record. Events travel through the outbox and the queue's `audit` topic;
//! one consumer group across the nodes writes each to the tenant's `audit_log`, once per event id.

use crate::{StoreResult, TenantId, UnixMillis};
use serde::{Deserialize, Serialize};

/// One audited action, as produced on the `audit` topic (JSON) and stored as one `audit_log` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Unique per event; the consumer stores an event id at most once, so redeliveries add no rows.
    pub event_id: String,
    pub tenant: TenantId,
    /// `user`, `admin`, `system` or `plugin`.
    pub actor_kind: String,
    /// The acting user's 64-bit id; `None` for admins and the system.
    pub actor_id: Option<i64>,
    /// What happened, dotted: `login.success`, `user.password.change`, `plugin.deploy`, `message.release`, …
    pub action: String,
    /// What it happened to: `user`, `topic`, `message`, `plugin`, `session`, …
    pub target_kind: String,
    pub target_id: String,
    pub topic: Option<String>,
    pub seq: Option<i64>,
    /// Anything else worth keeping, as a JSON object.
    pub detail: serde_json::Value,
    pub client_ip: Option<String>,
    /// Unix ms of the action.
    pub at: UnixMillis,
}

impl AuditEvent {
    /// An event with no topic, seq, detail or address; `actor` and `target` are (kind, id).
    pub fn new(
        event_id: String,
        tenant: TenantId,
        action: &str,
        actor: (&str, Option<i64>),
        target: (&str, String),
        at: UnixMillis,
    ) -> AuditEvent {
        AuditEvent {
            event_id,
            tenant,
            actor_kind: actor.0.to_owned(),
            actor_id: actor.1,
            action: action.to_owned(),
            target_kind: target.0.to_owned(),
            target_id: target.1,
            topic: None,
            seq: None,
            detail: serde_json::Value::Null,
            client_ip: None,
            at,
        }
    }

    pub fn with_topic(mut self, topic: &str, seq: Option<i64>) -> AuditEvent {
        self.topic = Some(topic.to_owned());
        self.seq = seq;
        self
    }

    pub fn with_detail(mut self, detail: serde_json::Value) -> AuditEvent {
        self.detail = detail;
        self
    }

    pub fn with_client_ip(mut self, ip: Option<String>) -> AuditEvent {
        self.client_ip = ip;
        self
    }
}

/// The tenant's `audit_log`. Rows are only ever inserted.
#[async_trait::async_trait]
pub trait AuditStore: Send + Sync {
    /// Stores `event` unless a row with its event id exists already. `Ok(true)` when it inserted the row, `Ok(false)`
    /// for a repeat: both mean the event is durably in the log.
    async fn record_audit(&self, tenant: TenantId, event: &AuditEvent) -> StoreResult<bool>;

    /// The tenant's newest rows first, at most `limit`.
    async fn list_audit(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<AuditEvent>>;
}
