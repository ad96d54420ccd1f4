//! Tenants' plugin choices (enabled or not, settings, failure policies per hook), persisted cluster-wide so that a
//! restart keeps them and every node applies the same ones: each stored choice gets a version greater than any
//! stored before it, and a node catches up by asking for what came after the last version it applied.

use crate::{StoreResult, TenantId};

/// One tenant's choice for one plugin, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginChoice {
    pub tenant: TenantId,
    pub plugin: String,
    /// The whole choice as the admin API shows it: `{"enabled": true|false|null, "settings": {…}|null,
    /// "failure": {"<hook>": "open"|"closed"}, "http_allow": ["<host>", …]|null}` (`http_allow` absent in choices
    /// stored before it existed: the manifest's list).
    pub choice: serde_json::Value,
    /// Assigned by the store when the choice was put.
    pub version: i64,
}

/// The choices of every tenant, in the control database (MariaDB) or the embedded SQLite file.
#[async_trait::async_trait]
pub trait PluginChoiceStore: Send + Sync {
    /// Stores `choice` as `tenant`'s choice for `plugin`, replacing the earlier one, under a new version greater
    /// than every version stored before; versions become visible in their order (a reader that has seen version
    /// `n` never later finds a new choice below `n`). Returns the version.
    async fn put_plugin_choice(&self, tenant: TenantId, plugin: &str, choice: &serde_json::Value) -> StoreResult<i64>;

    /// The current choices whose version is above `after`, in version order, at most `limit`.
    async fn plugin_choices_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginChoice>>;
}
