//! Who is online, across nodes. Embedded mode keeps it in process; scale-out mode keeps it in Redis with TTLs.

use crate::{Presence, PresenceMeta, StoreResult, TenantId, UnixMillis, UserId};

/// User presence, keyed by user and session.
#[async_trait::async_trait]
pub trait PresenceStore: Send + Sync {
    /// Records a session as online; returns the user's session count after it.
    async fn mark_online(&self, tenant: TenantId, user: UserId, session: &str, meta: &PresenceMeta)
    -> StoreResult<u32>;

    /// Refreshes the session's TTL and the user's last activity.
    async fn refresh(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<()>;

    /// Removes a session; returns how many remain. The last one leaving marks the user offline at `now`.
    async fn mark_offline(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<u32>;

    /// The user's presence. Adapters that cannot answer return `Presence::Unknown` rather than an error.
    async fn get_presence(&self, tenant: TenantId, user: UserId) -> Presence;

    /// Lists `user` as an online member of `topics` on this node (the keys
    /// `topic:{topic}:online_members` and the per-node set), so that topic events reach this node.
    async fn join_topics(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()>;

    /// Removes `user` from this node's online members of `topics`, and from each topic-wide set unless another
    /// live node still lists them.
    async fn leave_topics(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()>;

    /// The node's periodic heartbeat: refreshes the TTLs of every listed session (as [`Self::refresh`] does,
    /// without touching `last_active_at`) and of this node's online-member sets of every listed topic, in as
    /// few round trips as the adapter can. Idle connections stay online this way; a crashed node's expire.
    async fn heartbeat(&self, sessions: &[SessionBeat], topics: &[(TenantId, String)]) -> StoreResult<()>;

    /// Replaces the users with a session attached to `topic` on node `node_id` by `users` (empty clears them),
    /// so that every node's push worker can tell who saw a message live. The set lives as long as the node's
    /// online-member set of the topic ([`Self::heartbeat`] refreshes both), so a crashed node's attachments
    /// expire with it.
    async fn set_attached(&self, tenant: TenantId, topic: &str, node_id: &str, users: &[UserId]) -> StoreResult<()>;

    /// The users with a session attached to `topic` on any live node, in no particular order.
    async fn attached_users(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<UserId>>;
}

/// One live session, as the node heartbeat reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionBeat {
    pub tenant: TenantId,
    pub user: UserId,
    pub session: String,
}
