//! How records are stored in Redis: JSON copies of users, topics, subscriptions and messages (the domain types
//! carry no serde derive, so this module owns the stored shape), the hot-copy envelope the Lua scripts read,
//! and RFC 3339 timestamps for the idempotency value.

use palaver_core::{
    AccessMode, AuditStatus, DefaultAccess, Message, RecordState, Seq, StoreError, Subscription, Topic, TopicKind,
    UnixMillis, User, UserId,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A stored copy that no longer decodes: the reader treats it as a miss and the inner store answers.
pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("undecodable cached {what}: {e}"))
}

/// JSON of a stored shape. Serialising these shapes cannot fail (string-keyed maps, plain values), so an
/// error would be a bug; the empty string it becomes then fails to decode and reads as a miss.
pub(crate) fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn state_str(s: RecordState) -> &'static str {
    s.as_str()
}

/// A cached state; a word this build does not know reads as suspended, so a cache never lets in what the store
/// would refuse.
fn parse_state(s: &str) -> RecordState {
    match s {
        "active" => RecordState::Active,
        "deleted" => RecordState::Deleted,
        _ => RecordState::Suspended,
    }
}

fn kind_str(k: TopicKind) -> &'static str {
    match k {
        TopicKind::Me => "me",
        TopicKind::Fnd => "fnd",
        TopicKind::Sys => "sys",
        TopicKind::Group => "grp",
        TopicKind::P2p => "p2p",
    }
}

fn parse_kind(s: &str) -> Option<TopicKind> {
    Some(match s {
        "me" => TopicKind::Me,
        "fnd" => TopicKind::Fnd,
        "sys" => TopicKind::Sys,
        "grp" => TopicKind::Group,
        "p2p" => TopicKind::P2p,
        _ => return None,
    })
}

#[derive(Serialize, Deserialize)]
struct UserDto {
    id: UserId,
    created: UnixMillis,
    updated: UnixMillis,
    state: String,
    auth_version: i64,
    defacs: DefaultAccess,
    public: Option<Value>,
    trusted: Option<Value>,
    tags: Vec<String>,
    last_seen: Option<UnixMillis>,
    user_agent: Option<String>,
}

/// A user as cached. There is no credential in `User`, so no password hash can reach Redis through it.
pub(crate) fn encode_user(u: &User) -> String {
    let dto = UserDto {
        id: u.id,
        created: u.created,
        updated: u.updated,
        state: state_str(u.state).into(),
        auth_version: u.auth_version,
        defacs: u.defacs,
        public: u.public.clone(),
        trusted: u.trusted.clone(),
        tags: u.tags.clone(),
        last_seen: u.last_seen,
        user_agent: u.user_agent.clone(),
    };
    to_json(&dto)
}

pub(crate) fn decode_user(s: &str) -> Result<User, StoreError> {
    let d: UserDto = serde_json::from_str(s).map_err(|e| corrupt("user", e))?;
    Ok(User {
        id: d.id,
        created: d.created,
        updated: d.updated,
        state: parse_state(&d.state),
        auth_version: d.auth_version,
        defacs: d.defacs,
        public: d.public,
        trusted: d.trusted,
        tags: d.tags,
        last_seen: d.last_seen,
        user_agent: d.user_agent,
    })
}

#[derive(Serialize, Deserialize)]
struct TopicDto {
    name: String,
    kind: String,
    created: UnixMillis,
    updated: UnixMillis,
    touched: UnixMillis,
    state: String,
    owner: Option<UserId>,
    defacs: DefaultAccess,
    public: Option<Value>,
    trusted: Option<Value>,
    tags: Vec<String>,
    seq: Seq,
    del_id: i64,
}

pub(crate) fn encode_topic(t: &Topic) -> String {
    let dto = TopicDto {
        name: t.name.clone(),
        kind: kind_str(t.kind).into(),
        created: t.created,
        updated: t.updated,
        touched: t.touched,
        state: state_str(t.state).into(),
        owner: t.owner,
        defacs: t.defacs,
        public: t.public.clone(),
        trusted: t.trusted.clone(),
        tags: t.tags.clone(),
        seq: t.seq,
        del_id: t.del_id,
    };
    to_json(&dto)
}

pub(crate) fn decode_topic(s: &str) -> Result<Topic, StoreError> {
    let d: TopicDto = serde_json::from_str(s).map_err(|e| corrupt("topic", e))?;
    Ok(Topic {
        kind: parse_kind(&d.kind).ok_or_else(|| corrupt("topic", format!("kind {:?}", d.kind)))?,
        name: d.name,
        created: d.created,
        updated: d.updated,
        touched: d.touched,
        state: parse_state(&d.state),
        owner: d.owner,
        defacs: d.defacs,
        public: d.public,
        trusted: d.trusted,
        tags: d.tags,
        seq: d.seq,
        del_id: d.del_id,
    })
}

#[derive(Serialize, Deserialize)]
struct SubDto {
    topic: String,
    user: UserId,
    created: UnixMillis,
    updated: UnixMillis,
    deleted: Option<UnixMillis>,
    want: AccessMode,
    given: AccessMode,
    read: Seq,
    recv: Seq,
    del_id: i64,
    private: Option<Value>,
}

pub(crate) fn encode_sub(s: &Subscription) -> String {
    let dto = SubDto {
        topic: s.topic.clone(),
        user: s.user,
        created: s.created,
        updated: s.updated,
        deleted: s.deleted,
        want: s.want,
        given: s.given,
        read: s.read,
        recv: s.recv,
        del_id: s.del_id,
        private: s.private.clone(),
    };
    to_json(&dto)
}

pub(crate) fn decode_sub(s: &str) -> Result<Subscription, StoreError> {
    let d: SubDto = serde_json::from_str(s).map_err(|e| corrupt("subscription", e))?;
    Ok(Subscription {
        topic: d.topic,
        user: d.user,
        created: d.created,
        updated: d.updated,
        deleted: d.deleted,
        want: d.want,
        given: d.given,
        read: d.read,
        recv: d.recv,
        del_id: d.del_id,
        private: d.private,
    })
}

#[derive(Serialize, Deserialize)]
struct MessageDto {
    topic: String,
    seq: Seq,
    created: UnixMillis,
    from: UserId,
    head: Option<Map<String, Value>>,
    content: Value,
    client_mid: Option<String>,
    audit: String,
    risk_flags: Vec<String>,
}

/// A hot copy: `{audit letter}|{sender}|{message JSON}`. The header lets the read script decide visibility
/// without decoding JSON in Lua, whose numbers are doubles and would round 64-bit user ids.
pub(crate) fn encode_hot(m: &Message) -> String {
    let letter = match m.audit {
        AuditStatus::Pass => 'P',
        AuditStatus::Pending => 'H',
        AuditStatus::Reject => 'R',
    };
    let dto = MessageDto {
        topic: m.topic.clone(),
        seq: m.seq,
        created: m.created,
        from: m.from,
        head: m.head.clone(),
        content: m.content.clone(),
        client_mid: m.client_mid.clone(),
        audit: m.audit.as_str().into(),
        risk_flags: m.risk_flags.clone(),
    };
    format!("{letter}|{}|{}", m.from.0, to_json(&dto))
}

/// Decodes the JSON part of a hot copy (the read script returns it without the header).
pub(crate) fn decode_hot_json(s: &str) -> Result<Message, StoreError> {
    let d: MessageDto = serde_json::from_str(s).map_err(|e| corrupt("message", e))?;
    Ok(Message {
        audit: AuditStatus::parse(&d.audit).ok_or_else(|| corrupt("message", format!("audit {:?}", d.audit)))?,
        topic: d.topic,
        seq: d.seq,
        created: d.created,
        from: d.from,
        head: d.head,
        content: d.content,
        client_mid: d.client_mid,
        risk_flags: d.risk_flags,
    })
}

/// `2026-08-25T04:00:00.000Z` for a Unix millisecond instant, the `created_at` shape of stored values, in UTC.
pub(crate) fn rfc3339_millis(ms: UnixMillis) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil conversion: exact for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
}

// The wall clock, for values the adapter stamps itself.
pub(crate) use palaver_core::now_millis;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_in_utc() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(1_787_630_400_123), "2026-08-25T04:00:00.123Z");
        assert_eq!(rfc3339_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn hot_copies_round_trip_with_a_header() {
        let m = Message {
            topic: "grpX".into(),
            seq: 3,
            created: 5,
            from: UserId(u64::MAX),
            head: None,
            content: serde_json::json!("hi"),
            client_mid: Some("m".into()),
            audit: AuditStatus::Pending,
            risk_flags: vec!["spam".into()],
        };
        let hot = encode_hot(&m);
        let header = format!("H|{}|", u64::MAX);
        assert!(hot.starts_with(&header), "{hot}");
        assert_eq!(decode_hot_json(&hot[header.len()..]).unwrap(), m);
    }
}
