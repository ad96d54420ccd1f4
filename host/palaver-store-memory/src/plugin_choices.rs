//! The tenants' plugin choices in process: one choice per (tenant, plugin) under a version from one counter, for
//! tests and for a single node that need not keep them across a restart (one process is then every node's view).
//!
//! A put takes the next version and replaces the key's choice under the same lock, so versions become visible in
//! their order: a reader that has seen version `n` never later finds a new choice below it.

use async_trait::async_trait;
use palaver_core::ports::{PluginChoice, PluginChoiceStore};
use palaver_core::{StoreResult, TenantId};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// Plugin choices in process. Cloning is cheap and clones share the choices.
#[derive(Clone, Debug, Default)]
pub struct MemoryPluginChoices {
    state: Arc<Mutex<State>>,
}

#[derive(Default, Debug)]
struct State {
    /// The highest version handed out.
    last: i64,
    /// Each key's current choice and its version.
    current: HashMap<(TenantId, String), (Value, i64)>,
    /// The current versions, to list in version order: only a key's latest version is here.
    by_version: BTreeMap<i64, (TenantId, String)>,
}

impl MemoryPluginChoices {
    /// No choices yet; the first put gets version 1.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PluginChoiceStore for MemoryPluginChoices {
    async fn put_plugin_choice(&self, tenant: TenantId, plugin: &str, choice: &Value) -> StoreResult<i64> {
        let mut state = self.state.lock();
        state.last += 1;
        let version = state.last;
        let key = (tenant, plugin.to_owned());
        if let Some((_, old)) = state.current.insert(key.clone(), (choice.clone(), version)) {
            state.by_version.remove(&old);
        }
        state.by_version.insert(version, key);
        Ok(version)
    }

    async fn plugin_choices_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginChoice>> {
        let state = self.state.lock();
        let later = state.by_version.range((Bound::Excluded(after), Bound::Unbounded)).take(limit);
        Ok(later
            .map(|(&version, key)| {
                let (choice, _) = &state.current[key];
                PluginChoice { tenant: key.0, plugin: key.1.clone(), choice: choice.clone(), version }
            })
            .collect())
    }
}
