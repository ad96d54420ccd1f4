//! The device aggregate: the push tokens a user's apps registered (`{hi dev platf}` after login), one row per
//! device, kept per tenant. The push worker reads a user's devices; a provider that reports a token invalid has
//! its device removed.

use crate::{StoreResult, TenantId, UnixMillis, UserId};

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
}
