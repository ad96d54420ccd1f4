//! Summaries for the Admin side (`admin_event`): state changes it lists, as small JSON records keyed by tenant and
//! target so one target's summaries keep their order.
//!
//! Payload: `{"event_id","tenant_id","type","target":{"kind","id"},"data":{…},"at"}` with `type` one of
//! `user.state` (`data.state`: `active`/`suspended`), `group.created`, `group.deleted`, `group.members`
//! (`data.members`: the count after the change).

use super::new_event_id;
use crate::Inner;
use palaver_core::ports::{QueueRecord, QueueTopic};
use palaver_core::{TenantId, now_millis};
use serde_json::{Value, json};

/// One summary: its type, the target (kind, id) and what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub kind: String,
    pub target_kind: String,
    pub target_id: String,
    pub data: Value,
}

impl Summary {
    pub fn new(kind: &str, target_kind: &str, target_id: impl Into<String>, data: Value) -> Summary {
        Summary { kind: kind.to_owned(), target_kind: target_kind.to_owned(), target_id: target_id.into(), data }
    }

    /// The record it travels in.
    pub fn record(&self, tenant: TenantId) -> QueueRecord {
        let event_id = new_event_id();
        let payload = json!({
            "event_id": event_id,
            "tenant_id": tenant.0.to_string(),
            "type": self.kind,
            "target": { "kind": self.target_kind, "id": self.target_id },
            "data": self.data,
            "at": now_millis(),
        });
        let key = format!("{}:{}:{}", tenant.0, self.target_kind, self.target_id);
        let mut record = QueueRecord::new(QueueTopic::AdminEvent, key, payload.to_string().into_bytes());
        record.headers = vec![
            ("tenant".to_owned(), tenant.0.to_string()),
            ("event_id".to_owned(), event_id),
            ("type".to_owned(), self.kind.clone()),
        ];
        record
    }
}

impl Inner {
    /// Owes a summary to the Admin side.
    pub(crate) async fn summary(&self, tenant: TenantId, summary: Summary) {
        self.owe(tenant, &[summary.record(tenant)]).await;
    }

    /// Owes a group's member count after a change, read from the store.
    pub(crate) async fn summarize_members(&self, tenant: TenantId, topic: &str) {
        match self.ports.subs.list_topic_subs(tenant, topic).await.map(|subs| subs.len()) {
            Ok(n) => self.summary(tenant, Summary::new("group.members", "topic", topic, json!({ "members": n }))).await,
            Err(err) => tracing::debug!(%err, topic, "member count unavailable for the summary"),
        }
    }
}
