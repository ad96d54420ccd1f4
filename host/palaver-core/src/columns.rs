//! Column forms of domain values, shared by the SQL adapters (which must not depend on each other): ids as
//! signed 64-bit integers, modes as bit sets, states and kinds as short words, JSON as text. Pure functions.

use crate::ports::RequestStatus;
use crate::{AccessMode, AuditStatus, RecordState, StoreError, TopicKind, UserId};
use serde_json::Value;

/// A stored value that does not decode into the domain type it should hold.
#[derive(Debug, thiserror::Error)]
pub enum CorruptRow {
    #[error("column {column} holds invalid JSON: {source}")]
    Json { column: &'static str, source: serde_json::Error },
    #[error("column {column} holds unknown value {value:?}")]
    Value { column: &'static str, value: String },
}

impl From<CorruptRow> for StoreError {
    fn from(err: CorruptRow) -> Self {
        StoreError::Internal(err.to_string())
    }
}

/// A user id as stored. Ids above `i64::MAX` are reinterpreted, never truncated, so they round-trip.
pub fn user_col(u: UserId) -> i64 {
    u.0 as i64
}

/// The user id a column holds.
pub fn user_of(v: i64) -> UserId {
    UserId(v as u64)
}

/// The access mode a column holds (whatever integer width the column has); anything outside a byte is corrupt.
pub fn mode_of(column: &'static str, v: impl Into<i64>) -> Result<AccessMode, CorruptRow> {
    let v = v.into();
    u8::try_from(v).map(AccessMode).map_err(|_| CorruptRow::Value { column, value: v.to_string() })
}

/// A record state as stored.
pub fn state_col(s: RecordState) -> &'static str {
    match s {
        RecordState::Active => "active",
        RecordState::Suspended => "suspended",
    }
}

/// The record state a column holds.
pub fn state_of(v: &str) -> Result<RecordState, CorruptRow> {
    match v {
        "active" => Ok(RecordState::Active),
        "suspended" => Ok(RecordState::Suspended),
        other => Err(CorruptRow::Value { column: "state", value: other.to_owned() }),
    }
}

/// A topic kind as stored.
pub fn kind_col(k: TopicKind) -> &'static str {
    match k {
        TopicKind::Group => "grp",
        TopicKind::P2p => "p2p",
        TopicKind::Me => "me",
        TopicKind::Fnd => "fnd",
        TopicKind::Sys => "sys",
    }
}

/// The topic kind a column holds.
pub fn kind_of(v: &str) -> Result<TopicKind, CorruptRow> {
    match v {
        "grp" => Ok(TopicKind::Group),
        "p2p" => Ok(TopicKind::P2p),
        "me" => Ok(TopicKind::Me),
        "fnd" => Ok(TopicKind::Fnd),
        "sys" => Ok(TopicKind::Sys),
        other => Err(CorruptRow::Value { column: "kind", value: other.to_owned() }),
    }
}

/// An optional JSON value as stored: SQL NULL for `None`. Serialising a `Value` to a string cannot fail.
pub fn json_col(v: Option<&Value>) -> Option<String> {
    v.map(Value::to_string)
}

/// The column form of a profile field change: whether to write it, and what (NULL when cleared by `Null`).
pub fn json_change(v: Option<&Value>) -> (bool, Option<String>) {
    match v {
        None => (false, None),
        Some(Value::Null) => (true, None),
        Some(v) => (true, Some(v.to_string())),
    }
}

/// The JSON value a nullable column holds.
pub fn json_of(column: &'static str, v: Option<String>) -> Result<Option<Value>, CorruptRow> {
    v.map(|text| serde_json::from_str(&text).map_err(|source| CorruptRow::Json { column, source })).transpose()
}

/// A tag list as a JSON array, the form the tags columns hold.
pub fn tags_col(tags: &[String]) -> String {
    Value::from(tags.to_vec()).to_string()
}

/// The tag list a tags column holds.
pub fn tags_of(text: &str) -> Result<Vec<String>, CorruptRow> {
    serde_json::from_str(text).map_err(|source| CorruptRow::Json { column: "tags", source })
}

/// The moderation state an `audit_status` column holds.
pub fn audit_of(v: &str) -> Result<AuditStatus, CorruptRow> {
    AuditStatus::parse(v).ok_or_else(|| CorruptRow::Value { column: "audit_status", value: v.to_owned() })
}

/// The friend request status a `status` column holds.
pub fn request_status_of(v: &str) -> Result<RequestStatus, CorruptRow> {
    RequestStatus::parse(v).ok_or_else(|| CorruptRow::Value { column: "status", value: v.to_owned() })
}

/// Risk flags as stored: SQL NULL when there are none, so unflagged rows carry no JSON, else a JSON array.
pub fn risk_flags_col(flags: &[String]) -> Option<String> {
    (!flags.is_empty()).then(|| Value::from(flags.to_vec()).to_string())
}

/// The risk flags a `risk_flags` column holds; NULL means none.
pub fn risk_flags_of(text: Option<String>) -> Result<Vec<String>, CorruptRow> {
    text.map(|t| serde_json::from_str(&t).map_err(|source| CorruptRow::Json { column: "risk_flags", source }))
        .transpose()
        .map(Option::unwrap_or_default)
}

/// A query limit as SQL takes it; anything beyond `i64::MAX` is as good as unlimited.
pub fn limit_col(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_signed_columns() {
        for v in [1u64, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
            assert_eq!(user_of(user_col(UserId(v))), UserId(v));
        }
    }

    #[test]
    fn values_round_trip() {
        assert_eq!(mode_of("m", 255i16).unwrap(), AccessMode::OWNER_FULL);
        assert!(mode_of("m", 256i64).is_err());
        assert_eq!(state_of(state_col(RecordState::Suspended)).unwrap(), RecordState::Suspended);
        assert_eq!(kind_of(kind_col(TopicKind::P2p)).unwrap(), TopicKind::P2p);
        let tags = vec!["a".to_owned(), "b\"c".to_owned()];
        assert_eq!(tags_of(&tags_col(&tags)).unwrap(), tags);
        assert_eq!(json_change(Some(&Value::Null)), (true, None));
        assert_eq!(json_of("c", Some("{\"a\":1}".into())).unwrap(), Some(serde_json::json!({ "a": 1 })));
        assert!(json_of("c", Some("{".into())).is_err());
        assert_eq!(audit_of(AuditStatus::Pending.as_str()).unwrap(), AuditStatus::Pending);
        assert!(audit_of("held").is_err());
        assert_eq!(risk_flags_col(&[]), None);
        assert_eq!(risk_flags_of(risk_flags_col(&tags)).unwrap(), tags);
        assert_eq!(risk_flags_of(None).unwrap(), Vec::<String>::new());
        assert_eq!(request_status_of(RequestStatus::Cancelled.as_str()).unwrap(), RequestStatus::Cancelled);
        assert!(request_status_of("canceled").is_err());
    }
}
