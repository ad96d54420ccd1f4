//! Plugin releases and their rollout, cluster-wide: a component and its manifest uploaded once are stored here,
//! and every node runs the versions the plugin's rollout names, so one upload reaches every node and a rollback
//! (a rollout naming an older release) survives restarts and directory rescans.
//!
//! Rollouts are versioned like tenants' plugin choices: each put gets a revision greater than any stored before
//! it, revisions become visible in their order, and a node catches up by asking for what came after the last
//! revision it applied. Each node writes back what it runs (its report), which the admin API shows per node.

use crate::{StoreResult, TenantId, UnixMillis};

/// One uploaded version of a plugin: the manifest as uploaded and the component's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRelease {
    pub name: String,
    pub version: String,
    /// The component's SHA-256, lower-case hex.
    pub sha256: String,
    /// The manifest's TOML text, as uploaded.
    pub manifest: String,
    pub component: Vec<u8>,
    /// The trusted key whose ed25519 signature over the component was checked at upload, if it was signed.
    pub signed_by: Option<String>,
    pub uploaded_at: UnixMillis,
}

/// A release without its bytes, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseInfo {
    pub name: String,
    pub version: String,
    pub sha256: String,
    /// The component's size in bytes.
    pub size: u64,
    pub signed_by: Option<String>,
    pub uploaded_at: UnixMillis,
}

/// A version a few tenants run before everyone does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    pub version: String,
    /// Ascending, without repeats.
    pub tenants: Vec<TenantId>,
}

/// Which released versions of one plugin run: `live` for every tenant outside the canary, `canary.version` for
/// the canary's tenants. `live: None` hands the plugin back to each node's plugin directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRollout {
    pub plugin: String,
    pub live: Option<String>,
    pub canary: Option<Canary>,
    /// Assigned by the store when the rollout was put.
    pub revision: i64,
    pub updated_at: UnixMillis,
}

/// What one node runs of one plugin, as it last said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    pub node: String,
    pub plugin: String,
    /// The version live on the node, if any.
    pub live: Option<String>,
    /// The canary version loaded on the node, if any.
    pub canary: Option<String>,
    /// Why the node does not run what the rollout names (a refused load), if it does not.
    pub error: Option<String>,
    /// The rollout revision the node has applied.
    pub revision: i64,
    pub at: UnixMillis,
}

/// Releases, rollouts and node reports, in the control database (MariaDB) or the embedded SQLite file.
#[async_trait::async_trait]
pub trait PluginReleaseStore: Send + Sync {
    /// Stores a release. The same name and version again with the same `sha256` changes nothing and answers
    /// `false`; with another `sha256` it is `StoreError::Conflict` (a released version is immutable). `true`: stored.
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool>;

    /// One release with its bytes.
    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>>;

    /// The releases of `name`, newest upload first.
    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>>;

    /// Stores `rollout` (its `revision` and `updated_at` are ignored) as the plugin's rollout, replacing the
    /// earlier one, under a revision greater than every revision stored before; revisions become visible in their
    /// order. Returns the revision.
    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64>;

    /// The current rollouts whose revision is above `after`, in revision order, at most `limit`.
    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>>;

    /// Stores what `report.node` runs of `report.plugin`, replacing its earlier report.
    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()>;

    /// Every node's latest report, by plugin then node.
    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>>;
}
