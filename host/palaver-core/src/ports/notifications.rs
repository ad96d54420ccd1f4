//! The notification aggregate: notices from the system to one user (a friend request received, removal from a
//! group, a moderation outcome), kept as a history the user pages through and marks read.
//!
//! Plugins decide what to notify and when; this port stores the notices, keeps each one private to its user, and
//! makes the read marks race-free: a notice is read at most once, and its first read time is the one kept.

use crate::{StoreResult, TenantId, UnixMillis, UserId};
use serde_json::Value;

/// One stored notice to one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Unique within the tenant and increasing with creation, so it doubles as the paging cursor.
    pub id: i64,
    pub user: UserId,
    /// What happened, such as `friend_request` or `group_removed`; the plugin that writes it defines the words.
    pub kind: String,
    /// The details a client shows, as the writer shaped them.
    pub content: Value,
    /// The topic the notice is about, if any.
    pub source_topic: Option<String>,
    /// The message in `source_topic` the notice is about, if any.
    pub source_seq: Option<i64>,
    /// When the user first read it; `None` while unread.
    pub read: Option<UnixMillis>,
    pub created: UnixMillis,
    /// From this time on the notice is gone for the user: never listed, counted or marked.
    pub expires: Option<UnixMillis>,
}

impl Notification {
    /// True if the notice has expired at `now`; an expiry equal to `now` has passed.
    pub fn expired(&self, now: UnixMillis) -> bool {
        self.expires.is_some_and(|e| e <= now)
    }
}

/// A notice to store; the store assigns the id and the creation time is the call's `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification {
    pub user: UserId,
    pub kind: String,
    pub content: Value,
    pub source_topic: Option<String>,
    pub source_seq: Option<i64>,
    pub expires: Option<UnixMillis>,
}

impl NewNotification {
    /// The notice as stored under `id` at `now`: unread, with everything else as given.
    pub fn stored(&self, id: i64, now: UnixMillis) -> Notification {
        Notification {
            id,
            user: self.user,
            kind: self.kind.clone(),
            content: self.content.clone(),
            source_topic: self.source_topic.clone(),
            source_seq: self.source_seq,
            read: None,
            created: now,
            expires: self.expires,
        }
    }
}

/// Each user's system notifications. Every call that reads takes `now`, because an expired notice must vanish
/// at its expiry even before any sweep deletes it.
#[async_trait::async_trait]
pub trait NotificationStore: Send + Sync {
    /// Stores a new, unread notice created at `now` and returns it with the id the store assigned.
    async fn add(&self, tenant: TenantId, n: &NewNotification, now: UnixMillis) -> StoreResult<Notification>;

    /// The user's notices that have not expired at `now`, only the unread ones if `unread_only`, newest (highest
    /// id) first, at most `limit`, starting strictly below the id `cursor`.
    async fn list(
        &self,
        tenant: TenantId,
        user: UserId,
        unread_only: bool,
        cursor: Option<i64>,
        limit: usize,
        now: UnixMillis,
    ) -> StoreResult<Vec<Notification>>;

    /// Marks one of the user's notices read at `now`. True if it was unread; false if it was read already, which
    /// keeps the first read time, also when two calls race. `NotFound` if the id is not one of the user's notices
    /// or has expired, so that nobody learns whether another user's notice exists.
    async fn mark_read(&self, tenant: TenantId, user: UserId, id: i64, now: UnixMillis) -> StoreResult<bool>;

    /// Marks every unread, unexpired notice of the user read at `now`, and says how many that was.
    async fn mark_all_read(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64>;

    /// How many of the user's notices are unread and unexpired at `now`.
    async fn unread_count(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64>;
}
