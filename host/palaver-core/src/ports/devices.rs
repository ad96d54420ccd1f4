//! The device aggregate: the push tokens a user's apps registered (`{hi dev platf}` after login), one row per
//! device, kept per tenant. The push worker reads a user's devices; a provider that reports a token invalid has
//! its device removed. Pushes a filter delayed wait here too, until due, so that a node stopping loses none.

use crate::ports::{PushMessage, PushTask};
use crate::{StoreResult, TenantId, UnixMillis, UserId};
use serde::{Deserialize, Serialize};

/// One registered device of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub user: UserId,
    /// Derived from the token by the service (a hash), so a token registered twice is one device.
    pub device_id: String,
    /// `android`, `ios`, `web` or whatever the client said, lower-cased; empty when it said nothing.
    pub platform: String,
    /// The push provider the token belongs to: `fcm`, `apns`, `jpush` or `webhook`.
    pub provider: String,
    /// The provider's token (FCM registration token, APNs device token, JPush registration id).
    pub token: String,
    /// The client's user agent, as `{hi ua}` named it.
    pub app: String,
    /// The client's language (`{hi lang}`), empty when unknown.
    pub language: String,
    pub last_seen: UnixMillis,
}

/// Each user's devices. Every call carries the tenant.
#[async_trait::async_trait]
pub trait DeviceStore: Send + Sync {
    /// Inserts the device or replaces the row with the same `(user, device_id)`. The same token registered by
    /// another user moves to this user (a phone changes hands): the other user's row is removed in the same
    /// write, so a token never pushes to two accounts.
    async fn upsert_device(&self, tenant: TenantId, device: &Device) -> StoreResult<()>;

    /// Removes one device of the user. True if it existed.
    async fn delete_device(&self, tenant: TenantId, user: UserId, device_id: &str) -> StoreResult<bool>;

    /// The user's devices, in a stable order (by device id).
    async fn list_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Device>>;

    /// How many devices the user has (the bound `push.max_devices_per_user` is checked against it).
    async fn count_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<u64>;

    /// Keeps `push` until `due_at`.
    async fn put_delayed(&self, tenant: TenantId, due_at: UnixMillis, push: &DelayedPush) -> StoreResult<()>;

    /// How many delayed pushes the tenant has waiting (the bound `push.max_delayed` is checked against it).
    async fn count_delayed(&self, tenant: TenantId) -> StoreResult<u64>;

    /// Up to `limit` delayed pushes due at `now` that no claim holds, oldest due first, each with its id, now
    /// held by `owner` until `now + lease_ms`: another claimer skips them until then, so a claimer that dies
    /// before removing them leaves them to the next claim after the lease, and two never send one at once.
    async fn claim_delayed(
        &self,
        tenant: TenantId,
        owner: &str,
        now: UnixMillis,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<(i64, DelayedPush)>>;

    /// Removes delayed pushes that were sent (unknown ids are ignored).
    async fn remove_delayed(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()>;
}

/// A push a filter delayed: its task, the one recipient, and the message as the filter left it (stored as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelayedPush {
    pub task: PushTask,
    pub recipient: UserId,
    pub message: PushMessage,
}
