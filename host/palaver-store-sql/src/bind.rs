//! Binders for the rows both SQL adapters write whole: each macro appends one record's columns, in the order
//! the insert lists of [`rows`](crate::rows) name them, to a query the adapter has already started (SQLite binds
//! its `tenant_id` first; MariaDB, one database per tenant, binds nothing before). Macros rather than generic
//! functions, so each adapter's query keeps its concrete driver types. Modes are bound as `i64`, which both
//! backends store in whatever integer width their column has.

/// Binds a [`User`](palaver_core::User)'s columns: `id, created_at, updated_at, state, auth_version, defacs_auth,
/// defacs_anon, public, trusted, tags, last_seen, user_agent`.
#[macro_export]
macro_rules! bind_user {
    ($query:expr, $user:expr) => {{
        let user = $user;
        $query
            .bind($crate::columns::user_col(user.id))
            .bind(user.created)
            .bind(user.updated)
            .bind($crate::columns::state_col(user.state))
            .bind(user.auth_version)
            .bind(i64::from(user.defacs.auth.0))
            .bind(i64::from(user.defacs.anon.0))
            .bind($crate::columns::json_col(user.public.as_ref()))
            .bind($crate::columns::json_col(user.trusted.as_ref()))
            .bind($crate::columns::tags_col(&user.tags))
            .bind(user.last_seen)
            .bind(user.user_agent.as_deref())
    }};
}

/// Binds a [`Topic`](palaver_core::Topic)'s columns: `name, kind, created_at, updated_at, touched_at, state,
/// owner, defacs_auth, defacs_anon, public, trusted, tags, seq, del_id`.
#[macro_export]
macro_rules! bind_topic {
    ($query:expr, $topic:expr) => {{
        let topic = $topic;
        $query
            .bind(&topic.name)
            .bind($crate::columns::kind_col(topic.kind))
            .bind(topic.created)
            .bind(topic.updated)
            .bind(topic.touched)
            .bind($crate::columns::state_col(topic.state))
            .bind(topic.owner.map($crate::columns::user_col))
            .bind(i64::from(topic.defacs.auth.0))
            .bind(i64::from(topic.defacs.anon.0))
            .bind($crate::columns::json_col(topic.public.as_ref()))
            .bind($crate::columns::json_col(topic.trusted.as_ref()))
            .bind($crate::columns::tags_col(&topic.tags))
            .bind(topic.seq)
            .bind(topic.del_id)
    }};
}

/// Binds a [`Subscription`](palaver_core::Subscription)'s columns in the order of
/// [`sub_columns!`](crate::sub_columns).
#[macro_export]
macro_rules! bind_sub {
    ($query:expr, $sub:expr) => {{
        let sub = $sub;
        $query
            .bind(&sub.topic)
            .bind($crate::columns::user_col(sub.user))
            .bind(sub.created)
            .bind(sub.updated)
            .bind(sub.deleted)
            .bind(i64::from(sub.want.0))
            .bind(i64::from(sub.given.0))
            .bind(sub.read)
            .bind(sub.recv)
            .bind(sub.del_id)
            .bind($crate::columns::json_col(sub.private.as_ref()))
    }};
}

/// Binds the profile change of a [`UserUpdate`](palaver_core::UserUpdate) or
/// [`TopicUpdate`](palaver_core::TopicUpdate), for an `UPDATE` that sets `updated_at = ?`, then `public` and
/// `trusted` each from a pair `(write it?, value)` (so `Null` clears and `None` keeps), then
/// `tags = COALESCE(?, tags)`, `defacs_auth = COALESCE(?, …)` and `defacs_anon = COALESCE(?, …)`.
#[macro_export]
macro_rules! bind_profile_change {
    ($query:expr, $update:expr) => {{
        let update = $update;
        let (set_public, public) = $crate::columns::json_change(update.public.as_ref());
        let (set_trusted, trusted) = $crate::columns::json_change(update.trusted.as_ref());
        $query
            .bind(update.updated)
            .bind(set_public)
            .bind(public)
            .bind(set_trusted)
            .bind(trusted)
            .bind(update.tags.as_deref().map($crate::columns::tags_col))
            .bind(update.defacs.map(|d| i64::from(d.auth.0)))
            .bind(update.defacs.map(|d| i64::from(d.anon.0)))
    }};
}

/// Binds an [`AuditEvent`](palaver_core::ports::AuditEvent)'s columns: `event_id, actor_kind, actor_id, action,
/// target_kind, target_id, topic, seqid, detail, client_ip, created_at` (a `Null` detail is stored as SQL NULL).
#[macro_export]
macro_rules! bind_audit {
    ($query:expr, $event:expr) => {{
        let e = $event;
        $query
            .bind(&e.event_id)
            .bind(&e.actor_kind)
            .bind(e.actor_id)
            .bind(&e.action)
            .bind(&e.target_kind)
            .bind(&e.target_id)
            .bind(e.topic.as_deref())
            .bind(e.seq)
            .bind((!e.detail.is_null()).then(|| e.detail.to_string()))
            .bind(e.client_ip.as_deref())
            .bind(e.at)
    }};
}

/// Binds a [`NewNotification`](palaver_core::ports::NewNotification)'s columns and its time: `user_id, kind,
/// content, source_topic, source_seq, expires_at, created_at`.
#[macro_export]
macro_rules! bind_notification {
    ($query:expr, $new:expr, $now:expr) => {{
        let n = $new;
        $query
            .bind($crate::columns::user_col(n.user))
            .bind(&n.kind)
            .bind(n.content.to_string())
            .bind(n.source_topic.as_deref())
            .bind(n.source_seq)
            .bind(n.expires)
            .bind($now)
    }};
}

/// Binds a [`NewReport`](palaver_core::ports::NewReport)'s columns and its time: `reporter_id, target_type,
/// target, reason, note, created_at`.
#[macro_export]
macro_rules! bind_report {
    ($query:expr, $new:expr, $now:expr) => {{
        let r = $new;
        $query
            .bind($crate::columns::user_col(r.reporter))
            .bind(r.target_type.as_str())
            .bind(&r.target)
            .bind(&r.reason)
            .bind(r.note.as_deref())
            .bind($now)
    }};
}

/// Binds one `dellog` row after its `topic` (which each adapter binds, SQLite after its `tenant_id`): `del_id,
/// deleted_for, low, hi, created_at` of a [`DeleteMessages`](palaver_core::DeleteMessages)'s range.
#[macro_export]
macro_rules! bind_dellog {
    ($query:expr, $del_id:expr, $request:expr, $range:expr) => {{
        let (request, range) = ($request, $range);
        $query
            .bind($del_id)
            .bind($crate::dellog::deleted_for_col(request))
            .bind(range.low)
            .bind(range.hi)
            .bind(request.when)
    }};
}
