//! Column forms of the queue's values, shared by the SQL adapters: the outbox and embedded-queue rows (topic role
//! name, key, headers as a JSON array of `[name, value]` pairs, payload bytes) and the audit log's rows.

use crate::columns::CorruptRow;
use palaver_core::ports::{AuditEvent, OutboxEntry, QueueRecord, QueueTopic};
use palaver_core::{TenantId, UnixMillis};

/// Headers as stored: a JSON array of pairs.
pub fn headers_col(headers: &[(String, String)]) -> String {
    serde_json::to_string(headers).unwrap_or_else(|_| "[]".to_owned())
}

/// A record from its stored columns.
pub fn record_of(topic: &str, key: String, headers: &str, payload: Vec<u8>) -> Result<QueueRecord, CorruptRow> {
    let topic =
        QueueTopic::parse(topic).ok_or_else(|| CorruptRow::Value { column: "topic", value: topic.to_owned() })?;
    let headers: Vec<(String, String)> =
        serde_json::from_str(headers).map_err(|source| CorruptRow::Json { column: "headers", source })?;
    Ok(QueueRecord { topic, key, headers, payload })
}

/// An outbox row as the adapters select it: id, topic, key, headers, payload, created (Unix ms).
pub type OutboxColumns = (i64, String, String, String, Vec<u8>, UnixMillis);

/// The entry an outbox row holds.
pub fn outbox_entry_of(tenant: TenantId, row: OutboxColumns) -> Result<OutboxEntry, CorruptRow> {
    let (id, topic, key, headers, payload, created_at) = row;
    Ok(OutboxEntry { id, tenant, record: record_of(&topic, key, &headers, payload)?, created_at })
}

/// An audit row as the adapters select it: event id, actor kind, actor id, action, target kind, target id, topic,
/// seq, detail (JSON text), client ip, created (Unix ms).
pub type AuditColumns = (
    Option<String>,
    String,
    Option<i64>,
    String,
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    UnixMillis,
);

/// The event an audit row holds. Rows written before event ids existed read with an empty id.
pub fn audit_of(tenant: TenantId, row: AuditColumns) -> Result<AuditEvent, CorruptRow> {
    let (event_id, actor_kind, actor_id, action, target_kind, target_id, topic, seq, detail, client_ip, at) = row;
    let detail = match detail {
        Some(text) => serde_json::from_str(&text).map_err(|source| CorruptRow::Json { column: "detail", source })?,
        None => serde_json::Value::Null,
    };
    Ok(AuditEvent {
        event_id: event_id.unwrap_or_default(),
        tenant,
        actor_kind,
        actor_id,
        action,
        target_kind,
        target_id,
        topic,
        seq,
        detail,
        client_ip,
        at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_bad_rows_are_corrupt() {
        let headers = vec![("a".to_owned(), "1".to_owned()), ("b".to_owned(), "".to_owned())];
        let r = record_of("audit", "k".into(), &headers_col(&headers), b"p".to_vec()).unwrap();
        assert_eq!(r, QueueRecord { topic: QueueTopic::Audit, key: "k".into(), headers, payload: b"p".to_vec() });
        assert!(record_of("nope", "k".into(), "[]", vec![]).is_err());
        assert!(record_of("audit", "k".into(), "{", vec![]).is_err());
    }
}
