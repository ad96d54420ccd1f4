//! Conversions between domain values and their column forms: ids, modes, states, kinds, JSON text and times.

use crate::error::CorruptRow;
use palaver_core::{AccessMode, AuditStatus, DefaultAccess, RecordState, TopicKind, UnixMillis, UserId};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// Splices a bound Unix-millisecond parameter into SQL as a `DATETIME(3)`. Date arithmetic from the epoch literal
/// ignores the session time zone (unlike `FROM_UNIXTIME`), and covers the whole `DATETIME` range rather than
/// stopping in 2038, so the stored value is UTC whatever the connection's settings.
macro_rules! millis_to_datetime {
    () => {
        "TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00')"
    };
}

/// Reads a `DATETIME(3)` column back as Unix milliseconds, the inverse of `millis_to_datetime!`.
macro_rules! datetime_to_millis {
    ($column:literal) => {
        concat!("(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ", $column, ") DIV 1000)")
    };
}

pub(crate) use {datetime_to_millis, millis_to_datetime};

/// `millis_to_datetime!` split around its placeholder, for statements built at run time.
pub(crate) const DATETIME_OPEN: &str = "TIMESTAMPADD(MICROSECOND, ";
pub(crate) const DATETIME_CLOSE: &str = " * 1000, '1970-01-01 00:00:00')";

/// A user id as stored. Ids above `i64::MAX` are reinterpreted, never truncated, so they round-trip.
pub(crate) fn user_col(u: UserId) -> i64 {
    u.0 as i64
}

/// The user id a column holds.
pub(crate) fn user_of(v: i64) -> UserId {
    UserId(v as u64)
}

/// An access mode as stored: its bit set.
pub(crate) fn mode_col(m: AccessMode) -> i16 {
    i16::from(m.0)
}

/// The access mode a column holds; anything outside a byte is corrupt.
pub(crate) fn mode_of(column: &'static str, v: i16) -> Result<AccessMode, CorruptRow> {
    u8::try_from(v).map(AccessMode).map_err(|_| CorruptRow::Value { column, value: v.to_string() })
}

/// Default access from its two columns.
pub(crate) fn defacs_of(auth: i16, anon: i16) -> Result<DefaultAccess, CorruptRow> {
    Ok(DefaultAccess { auth: mode_of("defacs_auth", auth)?, anon: mode_of("defacs_anon", anon)? })
}

pub(crate) fn state_col(s: RecordState) -> &'static str {
    match s {
        RecordState::Active => "active",
        RecordState::Suspended => "suspended",
    }
}

pub(crate) fn state_of(v: &str) -> Result<RecordState, CorruptRow> {
    match v {
        "active" => Ok(RecordState::Active),
        "suspended" => Ok(RecordState::Suspended),
        other => Err(CorruptRow::Value { column: "state", value: other.to_owned() }),
    }
}

pub(crate) fn kind_col(k: TopicKind) -> &'static str {
    match k {
        TopicKind::Group => "grp",
        TopicKind::P2p => "p2p",
        TopicKind::Me => "me",
        TopicKind::Fnd => "fnd",
        TopicKind::Sys => "sys",
    }
}

pub(crate) fn kind_of(v: &str) -> Result<TopicKind, CorruptRow> {
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
pub(crate) fn json_col(v: Option<&Value>) -> Option<String> {
    v.map(Value::to_string)
}

/// The column form of a profile field change: whether to write it, and what (NULL when cleared by `Null`).
pub(crate) fn json_change(v: Option<&Value>) -> (bool, Option<String>) {
    match v {
        None => (false, None),
        Some(Value::Null) => (true, None),
        Some(v) => (true, Some(v.to_string())),
    }
}

/// The JSON value a nullable column holds.
pub(crate) fn json_of(column: &'static str, v: Option<String>) -> Result<Option<Value>, CorruptRow> {
    v.map(|text| serde_json::from_str(&text).map_err(|source| CorruptRow::Json { column, source })).transpose()
}

/// A tag list as a JSON array, the form the tags columns hold and `JSON_TABLE` reads.
pub(crate) fn tags_col(tags: &[String]) -> String {
    Value::from(tags.to_vec()).to_string()
}

/// The tag list a tags column holds.
pub(crate) fn tags_of(text: &str) -> Result<Vec<String>, CorruptRow> {
    serde_json::from_str(text).map_err(|source| CorruptRow::Json { column: "tags", source })
}

/// The moderation state an `audit_status` column holds.
pub(crate) fn audit_of(v: &str) -> Result<AuditStatus, CorruptRow> {
    AuditStatus::parse(v).ok_or_else(|| CorruptRow::Value { column: "audit_status", value: v.to_owned() })
}

/// Risk flags as stored: SQL NULL when there are none, so unflagged rows carry no JSON, else a JSON array.
pub(crate) fn risk_flags_col(flags: &[String]) -> Option<String> {
    (!flags.is_empty()).then(|| Value::from(flags.to_vec()).to_string())
}

/// The risk flags a `risk_flags` column holds; NULL means none.
pub(crate) fn risk_flags_of(text: Option<String>) -> Result<Vec<String>, CorruptRow> {
    text.map(|t| serde_json::from_str(&t).map_err(|source| CorruptRow::Json { column: "risk_flags", source }))
        .transpose()
        .map(Option::unwrap_or_default)
}

/// The wall clock in Unix milliseconds, for writes whose port call carries no time. A clock before 1970 reads as
/// the epoch rather than failing the write.
pub(crate) fn now_millis() -> UnixMillis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| UnixMillis::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A query limit as MariaDB takes it; anything beyond `i64::MAX` is as good as unlimited.
pub(crate) fn limit_col(limit: usize) -> i64 {
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
        assert_eq!(mode_of("m", mode_col(AccessMode::OWNER_FULL)).unwrap(), AccessMode::OWNER_FULL);
        assert!(mode_of("m", 256).is_err());
        assert_eq!(state_of(state_col(RecordState::Suspended)).unwrap(), RecordState::Suspended);
        assert_eq!(kind_of(kind_col(TopicKind::P2p)).unwrap(), TopicKind::P2p);
        let tags = vec!["a".to_owned(), "b\"c".to_owned()];
        assert_eq!(tags_of(&tags_col(&tags)).unwrap(), tags);
        assert_eq!(json_change(Some(&Value::Null)), (true, None));
        assert!(json_of("c", Some("{".into())).is_err());
        assert_eq!(audit_of(AuditStatus::Pending.as_str()).unwrap(), AuditStatus::Pending);
        assert_eq!(risk_flags_col(&[]), None);
        assert_eq!(risk_flags_of(risk_flags_col(&tags)).unwrap(), tags);
    }

    #[test]
    fn time_conversions_are_inverse_sql() {
        assert_eq!(millis_to_datetime!(), format!("{DATETIME_OPEN}?{DATETIME_CLOSE}"));
        assert_eq!(
            datetime_to_millis!("created_at"),
            "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', created_at) DIV 1000)"
        );
    }
}
