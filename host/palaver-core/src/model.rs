//! The records the ports store and return: users and their auth records, topics, subscriptions, messages and
//! deletion ranges. Public and private profile data are opaque JSON, exactly as Tinode treats them.

use crate::{AccessMode, DefaultAccess, Seq, TenantId, TopicKind, UnixMillis, UserId};
use serde_json::{Map, Value};

/// Whether an account or topic may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordState {
    #[default]
    Active,
    Suspended,
    /// An account its owner (or an admin) deleted: it never logs in or comes back; the row stays so that the
    /// messages it sent still name a sender. Topics are never in this state.
    Deleted,
}

impl RecordState {
    /// The word stores and APIs use.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Active => "active",
            RecordState::Suspended => "suspended",
            RecordState::Deleted => "deleted",
        }
    }
}

/// A user account.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: UserId,
    pub created: UnixMillis,
    pub updated: UnixMillis,
    pub state: RecordState,
    /// Bumped by a password change or a forced logout; tokens carrying an older value are refused.
    pub auth_version: i64,
    pub defacs: DefaultAccess,
    pub public: Option<Value>,
    pub trusted: Option<Value>,
    pub tags: Vec<String>,
    pub last_seen: Option<UnixMillis>,
    pub user_agent: Option<String>,
}

impl User {
    /// A new active account made at `now` with default access `defacs` and nothing else set; its id is chosen
    /// when it is stored.
    pub fn new_active(now: UnixMillis, defacs: DefaultAccess) -> Self {
        User {
            id: UserId(0),
            created: now,
            updated: now,
            state: RecordState::Active,
            auth_version: 1,
            defacs,
            public: None,
            trusted: None,
            tags: Vec::new(),
            last_seen: None,
            user_agent: None,
        }
    }
}

/// The basic-scheme credential of a user. The secret is an argon2 (or imported bcrypt) PHC hash, never a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRecord {
    pub user: UserId,
    /// Lower-cased login name, unique per tenant.
    pub login: String,
    pub secret_hash: String,
}

/// A change to a user's profile. `Some(Value::Null)` clears a field; `None` leaves it alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserUpdate {
    pub updated: UnixMillis,
    pub public: Option<Value>,
    pub trusted: Option<Value>,
    pub tags: Option<Vec<String>>,
    pub defacs: Option<DefaultAccess>,
}

/// A stored topic: a group or a P2P conversation. `me` and `fnd` are never stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    /// `grp…` or `p2p…`.
    pub name: String,
    pub kind: TopicKind,
    pub created: UnixMillis,
    pub updated: UnixMillis,
    /// When the last message was stored.
    pub touched: UnixMillis,
    pub state: RecordState,
    pub owner: Option<UserId>,
    pub defacs: DefaultAccess,
    pub public: Option<Value>,
    pub trusted: Option<Value>,
    pub tags: Vec<String>,
    /// The highest stored message seq. Adapters keep it current in the same write as the message.
    pub seq: Seq,
    /// The id of the last deletion transaction (soft or hard) in this topic.
    pub del_id: i64,
}

/// A change to a topic's description. `Some(Value::Null)` clears a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicUpdate {
    pub updated: UnixMillis,
    pub public: Option<Value>,
    pub trusted: Option<Value>,
    pub tags: Option<Vec<String>>,
    pub defacs: Option<DefaultAccess>,
    pub owner: Option<UserId>,
}

/// A user's membership in a topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub user: UserId,
    pub created: UnixMillis,
    pub updated: UnixMillis,
    /// Set when the user unsubscribed; such rows are invisible to `get_sub` and the list calls.
    pub deleted: Option<UnixMillis>,
    pub want: AccessMode,
    pub given: AccessMode,
    /// Highest seq the user reported read. Never decreases.
    pub read: Seq,
    /// Highest seq the user reported received. Never decreases and is never below `read`.
    pub recv: Seq,
    /// The user's last deletion transaction seen in this topic.
    pub del_id: i64,
    pub private: Option<Value>,
}

impl Subscription {
    /// The effective mode: what the user wants and was given.
    pub fn mode(&self) -> AccessMode {
        self.want.and(self.given)
    }
}

/// The moderation state of a stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum AuditStatus {
    /// Visible to every reader.
    #[default]
    Pass,
    /// Held for review: stored, visible to its sender only, never fanned out until released.
    Pending,
    /// Refused after review: visible to its sender only.
    Reject,
}

impl AuditStatus {
    /// The word that names this state.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Pass => "pass",
            AuditStatus::Pending => "pending",
            AuditStatus::Reject => "reject",
        }
    }

    /// The state a word names, if any.
    pub fn parse(s: &str) -> Option<AuditStatus> {
        match s {
            "pass" => Some(AuditStatus::Pass),
            "pending" => Some(AuditStatus::Pending),
            "reject" => Some(AuditStatus::Reject),
            _ => None,
        }
    }
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The stored topic name.
    pub topic: String,
    pub seq: Seq,
    pub created: UnixMillis,
    pub from: UserId,
    pub head: Option<Map<String, Value>>,
    pub content: Value,
    /// The sender's idempotency key, unique per (topic, sender) when present.
    pub client_mid: Option<String>,
    /// Moderation state; anything but `Pass` is shown to the sender only.
    pub audit: AuditStatus,
    /// Why moderation flagged the message (`has_risk` is true when this is not empty).
    pub risk_flags: Vec<String>,
}

/// What `append` did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The message was stored under its seq.
    Stored,
    /// A message with the same (topic, sender, client_mid) was already stored under `seq`; nothing was written.
    Duplicate { seq: Seq },
}

/// A window of a topic's history: `since` inclusive, `before` exclusive, newest first, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageQuery {
    pub since: Option<Seq>,
    pub before: Option<Seq>,
    pub limit: usize,
}

/// A half-open seq range `[low, hi)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeqRange {
    pub low: Seq,
    pub hi: Seq,
}

/// A request to delete messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteMessages {
    pub ranges: Vec<SeqRange>,
    /// `true`: delete for everyone (content dropped). `false`: hide from `for_user` only.
    pub hard: bool,
    /// The user who asked; for a soft delete, the only one who stops seeing the messages.
    pub for_user: UserId,
    pub when: UnixMillis,
    /// A hard delete that is the sender's recall of their own messages: stored as `recalled` by this user
    /// (rather than `deleted`), with the time.
    pub recalled_by: Option<UserId>,
}

/// The deletions a reader sees: the highest relevant deletion id and the deleted ranges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Deletions {
    pub clear: i64,
    pub ranges: Vec<SeqRange>,
}

/// Whether a tenant may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TenantState {
    #[default]
    Active,
    /// Every request of the tenant's clients is refused (HTTP 403).
    Disabled,
}

/// A tenant in the control registry.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    pub id: TenantId,
    /// A short unique code, e.g. `default` or `acme`.
    pub code: String,
    pub name: String,
    pub state: TenantState,
    /// The tenant's own database (scale-out mode).
    pub database: String,
    /// The API keys that resolve to this tenant.
    pub api_keys: Vec<String>,
    /// Tenant-level settings (policies, plugin settings), as JSON.
    pub config: Value,
    pub created: UnixMillis,
    pub updated: UnixMillis,
}

/// Why a user session exists, as presence stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresenceMeta {
    pub node_id: String,
    pub device: Option<String>,
    pub user_agent: Option<String>,
    pub now: UnixMillis,
}

/// What is known about a user being online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// The presence store could not be asked; callers must not claim either way.
    Unknown,
    Offline {
        last_seen: Option<UnixMillis>,
    },
    Online {
        sessions: u32,
        node_id: String,
        last_active: UnixMillis,
    },
}

/// The state of an idempotency key for `(topic, sender, client_mid)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The key was free and is now held as pending by the caller.
    Acquired,
    /// Another attempt is in progress; the caller answers a retryable error.
    Pending,
    /// A previous attempt stored the message as `seq`.
    Done { seq: Seq },
}
