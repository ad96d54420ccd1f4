//! The rows both SQL adapters select, named as their select lists name the columns, and how each becomes its
//! domain value. Times are Unix milliseconds whatever the backend stores (MariaDB's select lists convert its
//! `DATETIME(3)` columns under the same names); integers are read as `i64`, which both drivers decode from any
//! signed integer column width.

use crate::columns::{
    AnnouncementColumns, CorruptRow, announcement_view_of, audit_of, json_of, kind_of, mode_of, request_status_of,
    risk_flags_of, state_of, tags_of, user_of,
};
use palaver_core::ports::{AnnouncementView, FriendRequest};
use palaver_core::{DefaultAccess, Message, Subscription, Topic, User};
use serde_json::{Map, Value};

/// Decodes a list of rows, failing on the first corrupt one.
pub fn decode_all<R, T: TryFrom<R, Error = CorruptRow>>(rows: Vec<R>) -> Result<Vec<T>, CorruptRow> {
    rows.into_iter().map(T::try_from).collect()
}

/// Default access from its two columns.
pub fn defacs_of(auth: i64, anon: i64) -> Result<DefaultAccess, CorruptRow> {
    Ok(DefaultAccess { auth: mode_of("defacs_auth", auth)?, anon: mode_of("defacs_anon", anon)? })
}

/// The columns of a [`UserRow`], in the order [`bind_user!`](crate::bind_user) binds them, as a literal so that
/// `concat!` can splice it into static SQL.
#[macro_export]
macro_rules! user_columns {
    () => {
        "id, created_at, updated_at, state, auth_version, defacs_auth, defacs_anon, public, trusted, tags, \
         last_seen, user_agent"
    };
}

/// A `users` row as selected by [`user_columns!`](crate::user_columns).
#[derive(sqlx::FromRow)]
pub struct UserRow {
    id: i64,
    created_at: i64,
    updated_at: i64,
    state: String,
    auth_version: i64,
    defacs_auth: i64,
    defacs_anon: i64,
    public: Option<String>,
    trusted: Option<String>,
    tags: String,
    last_seen: Option<i64>,
    user_agent: Option<String>,
}

impl TryFrom<UserRow> for User {
    type Error = CorruptRow;

    fn try_from(r: UserRow) -> Result<Self, CorruptRow> {
        Ok(User {
            id: user_of(r.id),
            created: r.created_at,
            updated: r.updated_at,
            state: state_of(&r.state)?,
            auth_version: r.auth_version,
            defacs: defacs_of(r.defacs_auth, r.defacs_anon)?,
            public: json_of("public", r.public)?,
            trusted: json_of("trusted", r.trusted)?,
            tags: tags_of(&r.tags)?,
            last_seen: r.last_seen,
            user_agent: r.user_agent,
        })
    }
}

/// A `topics` row: `name, kind, created_at, updated_at, touched_at, state, owner, defacs_auth, defacs_anon,
/// public, trusted, tags, seq, del_id`.
#[derive(sqlx::FromRow)]
pub struct TopicRow {
    name: String,
    kind: String,
    created_at: i64,
    updated_at: i64,
    touched_at: i64,
    state: String,
    owner: Option<i64>,
    defacs_auth: i64,
    defacs_anon: i64,
    public: Option<String>,
    trusted: Option<String>,
    tags: String,
    seq: i64,
    del_id: i64,
}

impl TryFrom<TopicRow> for Topic {
    type Error = CorruptRow;

    fn try_from(r: TopicRow) -> Result<Self, CorruptRow> {
        Ok(Topic {
            name: r.name,
            kind: kind_of(&r.kind)?,
            created: r.created_at,
            updated: r.updated_at,
            touched: r.touched_at,
            state: state_of(&r.state)?,
            owner: r.owner.map(user_of),
            defacs: defacs_of(r.defacs_auth, r.defacs_anon)?,
            public: json_of("public", r.public)?,
            trusted: json_of("trusted", r.trusted)?,
            tags: tags_of(&r.tags)?,
            seq: r.seq,
            del_id: r.del_id,
        })
    }
}

/// The columns of a [`SubRow`], as a literal so that `concat!` can splice it into static SQL.
#[macro_export]
macro_rules! sub_columns {
    () => {
        "topic, user_id, created_at, updated_at, deleted_at, want, given, read_seq, recv_seq, del_id, private"
    };
}

/// A `subscriptions` row as selected by [`sub_columns!`](crate::sub_columns).
#[derive(sqlx::FromRow)]
pub struct SubRow {
    topic: String,
    user_id: i64,
    created_at: i64,
    updated_at: i64,
    deleted_at: Option<i64>,
    want: i64,
    given: i64,
    read_seq: i64,
    recv_seq: i64,
    del_id: i64,
    private: Option<String>,
}

impl TryFrom<SubRow> for Subscription {
    type Error = CorruptRow;

    fn try_from(r: SubRow) -> Result<Self, CorruptRow> {
        Ok(Subscription {
            topic: r.topic,
            user: user_of(r.user_id),
            created: r.created_at,
            updated: r.updated_at,
            deleted: r.deleted_at,
            want: mode_of("want", r.want)?,
            given: mode_of("given", r.given)?,
            read: r.read_seq,
            recv: r.recv_seq,
            del_id: r.del_id,
            private: json_of("private", r.private)?,
        })
    }
}

/// A history row (`im_group_messages` or `im_messages`): `seqid, created_at, from_user, head, content,
/// client_msg_id, audit_status, risk_flags`. The topic is not selected: the reader asked for it.
#[derive(sqlx::FromRow)]
pub struct MessageRow {
    seqid: i64,
    created_at: i64,
    from_user: i64,
    head: Option<String>,
    content: Option<String>,
    client_msg_id: Option<String>,
    audit_status: String,
    risk_flags: Option<String>,
}

impl MessageRow {
    /// The message of `topic` this row holds.
    pub fn into_message(self, topic: &str) -> Result<Message, CorruptRow> {
        let head = self
            .head
            .map(|text| serde_json::from_str::<Map<String, Value>>(&text))
            .transpose()
            .map_err(|source| CorruptRow::Json { column: "head", source })?;
        Ok(Message {
            topic: topic.to_owned(),
            seq: self.seqid,
            created: self.created_at,
            from: user_of(self.from_user),
            head,
            content: json_of("content", self.content)?.unwrap_or(Value::Null),
            client_mid: self.client_msg_id,
            audit: audit_of(&self.audit_status)?,
            risk_flags: risk_flags_of(self.risk_flags)?,
        })
    }
}

/// A `friend_requests` row: `id, from_user, to_user, message, status, created_at, updated_at, handled_at`.
#[derive(sqlx::FromRow)]
pub struct FriendRequestRow {
    id: i64,
    from_user: i64,
    to_user: i64,
    message: Option<String>,
    status: String,
    created_at: i64,
    updated_at: i64,
    handled_at: Option<i64>,
}

impl TryFrom<FriendRequestRow> for FriendRequest {
    type Error = CorruptRow;

    fn try_from(r: FriendRequestRow) -> Result<Self, CorruptRow> {
        Ok(FriendRequest {
            id: r.id,
            from: user_of(r.from_user),
            to: user_of(r.to_user),
            message: r.message,
            status: request_status_of(&r.status)?,
            created: r.created_at,
            updated: r.updated_at,
            handled: r.handled_at,
        })
    }
}

/// An announcement with the viewer's read mark and the read count, as the listing selects it: the announcement's
/// columns first, in their order (a flattened tuple reads its columns by position), then `read_at, read_count`.
#[derive(sqlx::FromRow)]
pub struct AnnouncementViewRow {
    #[sqlx(flatten)]
    announcement: AnnouncementColumns,
    read_at: Option<i64>,
    read_count: i64,
}

impl TryFrom<AnnouncementViewRow> for AnnouncementView {
    type Error = CorruptRow;

    fn try_from(r: AnnouncementViewRow) -> Result<Self, CorruptRow> {
        announcement_view_of(r.announcement, r.read_at, r.read_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_core::AccessMode;

    #[test]
    fn default_access_decodes_both_columns_and_refuses_wide_modes() {
        let defacs = defacs_of(i64::from(AccessMode::GROUP_AUTH.0), 0).unwrap();
        assert_eq!((defacs.auth, defacs.anon), (AccessMode::GROUP_AUTH, AccessMode(0)));
        assert!(defacs_of(0, 256).is_err());
    }
}
