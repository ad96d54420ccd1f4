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
}
