//! Tenant settings: small named JSON documents an operator sets for one tenant through the admin API (the push
//! providers first), kept in the tenant's own database so every node reads the same ones.

use crate::{StoreResult, TenantId};
use serde_json::Value;

/// The largest settings document a store accepts, in bytes of its JSON: a provider's credentials fit many times
/// over, and a runaway client cannot fill the table.
pub const MAX_SETTING_BYTES: usize = 64 * 1024;

/// Each tenant's settings documents, by name. Every call carries the tenant.
#[async_trait::async_trait]
pub trait SettingsStore: Send + Sync {
    /// The document stored under `name`, if any.
    async fn get_setting(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Value>>;

    /// Replaces the document under `name` (`Some`) or removes it (`None`); the caller has checked its size
    /// against [`MAX_SETTING_BYTES`] and its shape.
    async fn put_setting(&self, tenant: TenantId, name: &str, value: Option<&Value>) -> StoreResult<()>;
}
