//! Plugin releases, their rollouts and the nodes' reports in process, for tests and for a single node that need
//! not keep them across a restart (one process is then every node's view): releases by (name, version), one
//! rollout per plugin under a revision from one counter, one report per (node, plugin).
//!
//! A rollout put takes the next revision and replaces the plugin's rollout under the same lock, so revisions become
//! visible in their order: a reader that has seen revision `n` never later finds a new rollout below it.

use async_trait::async_trait;
use palaver_core::ports::{NodeReport, PluginRelease, PluginReleaseStore, PluginRollout, ReleaseInfo};
use palaver_core::{StoreError, StoreResult, UnixMillis};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// Plugin releases, rollouts and node reports in process. Cloning is cheap and clones share them.
#[derive(Clone, Debug, Default)]
pub struct MemoryPluginReleases {
    state: Arc<Mutex<State>>,
}

#[derive(Default, Debug)]
struct State {
    /// Every release by (name, version); never replaced or removed.
    releases: HashMap<(String, String), PluginRelease>,
    /// The highest revision handed out.
    last: i64,
    /// Each plugin's current rollout, with its revision and time set.
    rollouts: HashMap<String, PluginRollout>,
    /// The current revisions, to list in revision order: only a plugin's latest revision is here.
    by_revision: BTreeMap<i64, String>,
    /// Each node's latest report, keyed (plugin, node) so that iterating lists them by plugin then node.
    reports: BTreeMap<(String, String), NodeReport>,
}

impl MemoryPluginReleases {
    /// No releases, rollouts or reports yet; the first rollout put gets revision 1.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PluginReleaseStore for MemoryPluginReleases {
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool> {
        let mut state = self.state.lock();
        let key = (release.name.clone(), release.version.clone());
        if let Some(stored) = state.releases.get(&key) {
            if stored.sha256 == release.sha256 {
                return Ok(false);
            }
            return Err(StoreError::Conflict(format!(
                "plugin {} {} is already released with sha256 {}",
                release.name, release.version, stored.sha256
            )));
        }
        state.releases.insert(key, release.clone());
        Ok(true)
    }

    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>> {
        Ok(self.state.lock().releases.get(&(name.to_owned(), version.to_owned())).cloned())
    }

    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>> {
        let state = self.state.lock();
        let mut infos: Vec<ReleaseInfo> = state
            .releases
            .values()
            .filter(|r| r.name == name)
            .map(|r| ReleaseInfo {
                name: r.name.clone(),
                version: r.version.clone(),
                sha256: r.sha256.clone(),
                size: r.component.len() as u64,
                signed_by: r.signed_by.clone(),
                uploaded_at: r.uploaded_at,
            })
            .collect();
        // Newest upload first; versions uploaded in the same millisecond by version, highest first.
        infos.sort_by(|a, b| b.uploaded_at.cmp(&a.uploaded_at).then_with(|| b.version.cmp(&a.version)));
        Ok(infos)
    }

    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64> {
        let mut state = self.state.lock();
        state.last += 1;
        let revision = state.last;
        let stored = PluginRollout { revision, updated_at: now, ..rollout.clone() };
        if let Some(old) = state.rollouts.insert(rollout.plugin.clone(), stored) {
            state.by_revision.remove(&old.revision);
        }
        state.by_revision.insert(revision, rollout.plugin.clone());
        Ok(revision)
    }

    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>> {
        let state = self.state.lock();
        let later = state.by_revision.range((Bound::Excluded(after), Bound::Unbounded)).take(limit);
        Ok(later.map(|(_, plugin)| state.rollouts[plugin].clone()).collect())
    }

    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()> {
        let key = (report.plugin.clone(), report.node.clone());
        self.state.lock().reports.insert(key, report.clone());
        Ok(())
    }

    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>> {
        Ok(self.state.lock().reports.values().cloned().collect())
    }
}
