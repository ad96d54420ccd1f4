//! Column forms of domain values, shared by the SQL adapters (which must not depend on each other): ids as
//! signed 64-bit integers, modes as bit sets, states and kinds as short words, JSON as text. Pure functions.
//!
//! The `…Columns` tuples are the rows the adapters select for the group and notification ports (and the plugin
//! rollouts), in the order their select lists name the columns (times as Unix milliseconds, whatever the backend stores); the `…_of`
//! functions next to them assemble the domain value, so every adapter decodes a row the same way.

use palaver_core::ports::{
    Announcement, AnnouncementView, Canary, Friend, GroupRole, JoinPolicy, JoinRequest, Mute, Notification,
    PluginRollout, RequestStatus, RoleGrant,
};
use palaver_core::{AccessMode, AuditStatus, RecordState, StoreError, TenantId, TopicKind, UnixMillis, UserId};
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
    s.as_str()
}

/// The record state a column holds.
pub fn state_of(v: &str) -> Result<RecordState, CorruptRow> {
    match v {
        "active" => Ok(RecordState::Active),
        "suspended" => Ok(RecordState::Suspended),
        "deleted" => Ok(RecordState::Deleted),
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
    v.map(|text| json_text_of(column, &text)).transpose()
}

/// The JSON value a non-null column holds.
pub fn json_text_of(column: &'static str, text: &str) -> Result<Value, CorruptRow> {
    serde_json::from_str(text).map_err(|source| CorruptRow::Json { column, source })
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

/// The group role a `role` column holds.
pub fn role_of(v: &str) -> Result<GroupRole, CorruptRow> {
    GroupRole::parse(v).ok_or_else(|| CorruptRow::Value { column: "role", value: v.to_owned() })
}

/// The join policy a `join_policy` column holds.
pub fn join_policy_of(v: String) -> Result<JoinPolicy, CorruptRow> {
    JoinPolicy::parse(&v).ok_or(CorruptRow::Value { column: "join_policy", value: v })
}

/// The user id column value that stands for everyone: a mute of everyone's `user_id`, a hard delete's
/// `deleted_for`. Never a valid user id.
pub const EVERYONE: i64 = 0;

/// The `user_id` column of a mute's target: the member, or [`EVERYONE`].
pub fn mute_target_col(user: Option<UserId>) -> i64 {
    user.map_or(EVERYONE, user_col)
}

/// A `friends` row of one user: `friend_id, remark, created_at, updated_at`.
pub type FriendColumns = (i64, Option<String>, UnixMillis, UnixMillis);

/// `user`'s friendship a `friends` row holds.
pub fn friend_of(user: UserId, (friend, remark, created, updated): FriendColumns) -> Friend {
    Friend { user, friend: user_of(friend), remark, created, updated }
}

/// A `group_member_roles` row: `user_id, role, granted_by, updated_at`.
pub type GrantColumns = (i64, String, Option<i64>, UnixMillis);

/// The role grant a `group_member_roles` row holds.
pub fn grant_of((user, role, by, updated): GrantColumns) -> Result<RoleGrant, CorruptRow> {
    Ok(RoleGrant { user: user_of(user), role: role_of(&role)?, granted_by: by.map(user_of), updated })
}

/// A `group_mutes` row: `user_id, muted_by, reason, muted_until, created_at, updated_at`.
pub type MuteColumns = (i64, Option<i64>, Option<String>, Option<UnixMillis>, UnixMillis, UnixMillis);

/// The mute a `group_mutes` row holds; a `user_id` of [`EVERYONE`] is the mute of everyone.
pub fn mute_of((user, by, reason, until, created, updated): MuteColumns) -> Mute {
    Mute { user: (user != EVERYONE).then(|| user_of(user)), muted_by: by.map(user_of), reason, until, created, updated }
}

/// A `group_join_requests` row: `id, topic, user_id, inviter, message, status, handled_by, handled_at,
/// created_at`.
pub type JoinRequestColumns =
    (i64, String, i64, Option<i64>, Option<String>, String, Option<i64>, Option<UnixMillis>, UnixMillis);

/// The join request a `group_join_requests` row holds.
pub fn join_request_of(row: JoinRequestColumns) -> Result<JoinRequest, CorruptRow> {
    let (id, topic, user, inviter, message, status, handled_by, handled, created) = row;
    Ok(JoinRequest {
        id,
        topic,
        user: user_of(user),
        inviter: inviter.map(user_of),
        message,
        status: request_status_of(&status)?,
        handled_by: handled_by.map(user_of),
        created,
        handled,
    })
}

/// A `group_announcements` row: `id, topic, author, title, content, pinned, version, created_at, updated_at`.
pub type AnnouncementColumns = (i64, String, i64, Option<String>, String, bool, i32, UnixMillis, UnixMillis);

/// The announcement a `group_announcements` row holds.
pub fn announcement_of(row: AnnouncementColumns) -> Result<Announcement, CorruptRow> {
    let (id, topic, author, title, content, pinned, version, created, updated) = row;
    let content = json_text_of("content", &content)?;
    Ok(Announcement { id, topic, author: user_of(author), title, content, pinned, version, created, updated })
}

/// The announcement of a `group_announcements` row as one member sees it: with their read time (`None` while
/// unread) and the count of its read marks.
pub fn announcement_view_of(
    row: AnnouncementColumns,
    read: Option<UnixMillis>,
    read_count: i64,
) -> Result<AnnouncementView, CorruptRow> {
    Ok(AnnouncementView { announcement: announcement_of(row)?, read, reads: read_count.unsigned_abs() })
}

/// An `im_system_notifications` row: `id, user_id, kind, content, source_topic, source_seq, read_at, expires_at,
/// created_at`.
pub type NotificationColumns =
    (i64, i64, String, String, Option<String>, Option<i64>, Option<UnixMillis>, Option<UnixMillis>, UnixMillis);

/// The notice an `im_system_notifications` row holds.
pub fn notification_of(row: NotificationColumns) -> Result<Notification, CorruptRow> {
    let (id, user, kind, content, source_topic, source_seq, read, expires, created) = row;
    let content = json_text_of("content", &content)?;
    Ok(Notification { id, user: user_of(user), kind, content, source_topic, source_seq, read, created, expires })
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

/// A plugin rollout as selected: plugin, live version, canary version, canary tenants (JSON), revision, updated at.
pub type RolloutColumns = (String, Option<String>, Option<String>, Option<String>, i64, UnixMillis);

/// The canary columns of a rollout: its version and its tenants as a JSON array of ids (unsigned, as the ids
/// are), both NULL without a canary.
pub fn canary_cols(canary: Option<&Canary>) -> (Option<&str>, Option<String>) {
    match canary {
        Some(c) => {
            let ids: Vec<u64> = c.tenants.iter().map(|t| t.0).collect();
            (Some(c.version.as_str()), Some(Value::from(ids).to_string()))
        }
        None => (None, None),
    }
}

/// The rollout a `plugin_rollouts` row holds. A canary version without tenants (or tenants without a version) is
/// corrupt: the tables' CHECK keeps the two NULL together.
pub fn rollout_of(
    (plugin, live, canary_version, canary_tenants, revision, updated_at): RolloutColumns,
) -> Result<PluginRollout, CorruptRow> {
    let canary = match (canary_version, canary_tenants) {
        (Some(version), Some(text)) => {
            let ids: Vec<u64> =
                serde_json::from_str(&text).map_err(|source| CorruptRow::Json { column: "canary_tenants", source })?;
            Some(Canary { version, tenants: ids.into_iter().map(TenantId).collect() })
        }
        (None, None) => None,
        (version, tenants) => {
            let value = format!("canary_version {version:?} with canary_tenants {tenants:?}");
            return Err(CorruptRow::Value { column: "canary_tenants", value });
        }
    };
    Ok(PluginRollout { plugin, live, canary, revision, updated_at })
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
        assert_eq!(role_of(GroupRole::Admin.as_str()).unwrap(), GroupRole::Admin);
        assert!(role_of("boss").is_err());
        assert_eq!(join_policy_of("closed".to_owned()).unwrap(), JoinPolicy::Closed);
        assert!(join_policy_of("invite".to_owned()).is_err());
    }

    #[test]
    fn rows_assemble_their_domain_values() {
        let friend = friend_of(UserId(1), (user_col(UserId(u64::MAX)), Some("r".to_owned()), 2, 3));
        assert_eq!((friend.user, friend.friend, friend.remark.as_deref()), (UserId(1), UserId(u64::MAX), Some("r")));
        assert_eq!(mute_target_col(None), EVERYONE);
        let everyone = mute_of((EVERYONE, Some(3), None, None, 1, 2));
        assert_eq!((everyone.user, everyone.muted_by), (None, Some(UserId(3))));
        assert_eq!(mute_of((mute_target_col(Some(UserId(4))), None, None, Some(9), 1, 2)).user, Some(UserId(4)));
        let grant = grant_of((5, "owner".to_owned(), None, 7)).unwrap();
        assert_eq!((grant.user, grant.role, grant.updated), (UserId(5), GroupRole::Owner, 7));
        let row = (1, "grpA".to_owned(), 5, Some(6), None, "pending".to_owned(), None, None, 8);
        let request = join_request_of(row).unwrap();
        assert_eq!(request, JoinRequest::pending(1, "grpA", UserId(5), Some(UserId(6)), None, 8));
        let row = (2, "grpA".to_owned(), 5, None, "{\"a\":1}".to_owned(), true, 3, 4, 6);
        let view = announcement_view_of(row.clone(), Some(5), 2).unwrap();
        assert_eq!((view.announcement.content, view.read, view.reads), (serde_json::json!({ "a": 1 }), Some(5), 2));
        assert!(announcement_of((row.0, row.1, row.2, row.3, "{".to_owned(), row.5, row.6, row.7, row.8)).is_err());
        let row = (3, 5, "k".to_owned(), "[]".to_owned(), Some("grpA".to_owned()), Some(4), None, Some(9), 8);
        let n = notification_of(row).unwrap();
        assert_eq!((n.user, n.content, n.expires, n.created), (UserId(5), serde_json::json!([]), Some(9), 8));
    }

    #[test]
    fn rollouts_round_trip_through_their_columns() {
        let canary = Canary { version: "2.0.0".to_owned(), tenants: vec![TenantId(1), TenantId(u64::MAX)] };
        let (version, tenants) = canary_cols(Some(&canary));
        assert_eq!((version, tenants.as_deref()), (Some("2.0.0"), Some("[1,18446744073709551615]")));
        let row = ("p".to_owned(), None, version.map(str::to_owned), tenants, 3, 4);
        let rollout = rollout_of(row).unwrap();
        assert_eq!(
            rollout,
            PluginRollout { plugin: "p".into(), live: None, canary: Some(canary), revision: 3, updated_at: 4 }
        );
        assert_eq!(canary_cols(None), (None, None));
        assert_eq!(rollout_of(("p".into(), Some("1.0.0".into()), None, None, 1, 2)).unwrap().canary, None);
        assert!(rollout_of(("p".into(), None, Some("2.0.0".into()), None, 1, 2)).is_err(), "a version without tenants");
        assert!(rollout_of(("p".into(), None, Some("2.0.0".into()), Some("[-1]".into()), 1, 2)).is_err());
    }
}
