//! Builders for the records the cases store, so each case states only what it is about.

use palaver_core::{
    AccessMode, AuditStatus, AuthRecord, DefaultAccess, Message, RecordState, Seq, Subscription, Topic, TopicKind,
    UnixMillis, User, UserId, p2p_name,
};
use serde_json::json;

/// A fixed instant the cases measure from, so stored timestamps are easy to compare.
pub(crate) const T0: UnixMillis = 1_700_000_000_000;

/// An active user with a public name and no tags.
pub(crate) fn user(id: u64) -> User {
    User {
        id: UserId(id),
        created: T0,
        updated: T0,
        state: RecordState::Active,
        auth_version: 0,
        defacs: DefaultAccess::USER,
        public: Some(json!({ "fn": format!("User {id}") })),
        trusted: None,
        tags: Vec::new(),
        last_seen: None,
        user_agent: None,
    }
}

/// A user with the given tags.
pub(crate) fn tagged_user(id: u64, tags: &[&str]) -> User {
    User { tags: tags.iter().map(|t| (*t).to_owned()).collect(), ..user(id) }
}

/// A basic credential for `id`.
pub(crate) fn auth(id: u64, login: &str, hash: &str) -> AuthRecord {
    AuthRecord { user: UserId(id), login: login.to_owned(), secret_hash: hash.to_owned() }
}

/// A bare active topic of `kind`: no owner, no public data, created at 1. For adapters' own tests, which store
/// topics only to hang messages and subscriptions on.
pub fn bare_topic(name: &str, kind: TopicKind) -> Topic {
    Topic {
        name: name.to_owned(),
        kind,
        created: 1,
        updated: 1,
        touched: 1,
        state: RecordState::Active,
        owner: None,
        defacs: DefaultAccess::GROUP,
        public: None,
        trusted: None,
        tags: Vec::new(),
        seq: 0,
        del_id: 0,
    }
}

/// An active group topic owned by user 1.
pub(crate) fn group(name: &str) -> Topic {
    Topic {
        name: name.to_owned(),
        kind: TopicKind::Group,
        created: T0,
        updated: T0,
        touched: T0,
        state: RecordState::Active,
        owner: Some(UserId(1)),
        defacs: DefaultAccess::GROUP,
        public: Some(json!({ "fn": name })),
        trusted: None,
        tags: Vec::new(),
        seq: 0,
        del_id: 0,
    }
}

/// A group topic with the given tags.
pub(crate) fn tagged_group(name: &str, tags: &[&str]) -> Topic {
    Topic { tags: tags.iter().map(|t| (*t).to_owned()).collect(), ..group(name) }
}

/// The P2P topic between users `a` and `b`.
pub(crate) fn p2p(a: u64, b: u64) -> Topic {
    Topic {
        kind: TopicKind::P2p,
        owner: None,
        defacs: DefaultAccess { auth: AccessMode::P2P, anon: AccessMode::NONE },
        public: None,
        ..group(&p2p_name(UserId(a), UserId(b)))
    }
}

/// An active subscription with the group's default access and no read position.
pub(crate) fn sub(topic: &str, user: u64) -> Subscription {
    Subscription {
        topic: topic.to_owned(),
        user: UserId(user),
        created: T0,
        updated: T0,
        deleted: None,
        want: AccessMode::GROUP_AUTH,
        given: AccessMode::GROUP_AUTH,
        read: 0,
        recv: 0,
        del_id: 0,
        private: Some(json!({ "comment": "mine" })),
    }
}

/// A text message created `seq` seconds after [`T0`], with no idempotency key, passed by moderation.
pub(crate) fn msg(topic: &str, seq: Seq, from: u64) -> Message {
    let mut head = serde_json::Map::new();
    head.insert("mime".to_owned(), json!("text/plain"));
    Message {
        topic: topic.to_owned(),
        seq,
        created: T0 + seq * 1000,
        from: UserId(from),
        head: Some(head),
        content: json!(format!("message {seq}")),
        client_mid: None,
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}

/// A message carrying the idempotency key `mid`.
pub(crate) fn msg_mid(topic: &str, seq: Seq, from: u64, mid: &str) -> Message {
    Message { client_mid: Some(mid.to_owned()), ..msg(topic, seq, from) }
}

/// A message moderation holds in `audit`, flagged for `flags`.
pub(crate) fn held_msg(topic: &str, seq: Seq, from: u64, audit: AuditStatus, flags: &[&str]) -> Message {
    Message { audit, risk_flags: tags(flags), ..msg(topic, seq, from) }
}

/// Tags as owned strings, the way the search calls take them.
pub(crate) fn tags(tags: &[&str]) -> Vec<String> {
    tags.iter().map(|t| (*t).to_owned()).collect()
}
