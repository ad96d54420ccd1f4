//! Cluster rollouts as one node applies them: the versions a rollout names (live for every tenant, a canary for a
//! few) go through the load gate once, then swap in together. A version the node already holds (live, previous or
//! canary, same component and manifest) is reused without the gate, so a rollback is a pointer swap here too. A
//! version the gate refuses changes nothing: the node keeps what it runs and says why (`last_error`).
//!
//! While a rollout manages a plugin, directory scans leave it alone, so a rollback is not undone by the next
//! SIGHUP or file change; a rollout with no live version hands the plugin back to the directory.

use crate::error::{LoadError, RegistryError};
use crate::manifest::Manifest;
use crate::registry::{CanaryVersion, PluginRegistry, Slot};
use crate::version::{PluginVersion, sha256_hex};
use palaver_core::TenantId;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// One released version: its manifest and component.
#[derive(Debug, Clone, Copy)]
pub struct ReleaseRef<'a> {
    pub manifest: &'a Manifest,
    pub component: &'a [u8],
}

/// What a rollout asks this node to run of one plugin.
#[derive(Debug, Clone)]
pub struct RolloutTarget<'a> {
    /// The version every tenant outside the canary runs; `None` hands the live version back to the directory
    /// (a canary may still be set: staging a release against whatever the nodes' directories hold).
    pub live: Option<ReleaseRef<'a>>,
    /// A version the listed tenants run instead.
    pub canary: Option<(ReleaseRef<'a>, BTreeSet<TenantId>)>,
}

/// What the node runs of the plugin after applying a rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutApplied {
    pub live: Option<String>,
    pub canary: Option<String>,
    /// Whether anything changed.
    pub changed: bool,
}

impl PluginRegistry {
    /// Makes plugin `name` run what `target` names, or changes nothing and says why.
    pub fn apply_rollout(&self, name: &str, target: &RolloutTarget<'_>) -> Result<RolloutApplied, RegistryError> {
        let _g = self.load_lock.lock();
        let slot = self.slot_or_create(name);
        for r in target.live.iter().chain(target.canary.as_ref().map(|(r, _)| r)) {
            if r.manifest.name != name {
                let e = LoadError::Manifest(format!("release names plugin {:?}, not {name:?}", r.manifest.name));
                self.refused(&slot, &e);
                return Err(e.into());
            }
        }
        // Every version passes (or is found) before anything swaps, so a refused one leaves all as it was.
        let live_v = target.live.map(|r| self.held_or_gated(&slot, r)).transpose()?;
        let canary_v = match &target.canary {
            Some((r, tenants)) => Some((self.held_or_gated(&slot, *r)?, tenants.clone())),
            None => None,
        };
        // Without a live version the directory decides again from its next scan (what runs keeps running).
        let was_managed = slot.managed.swap(live_v.is_some(), Ordering::SeqCst);
        let mut changed = was_managed != live_v.is_some();
        if let Some(live_v) = &live_v
            && !slot.current.load_full().is_some_and(|c| Arc::ptr_eq(&c, live_v))
        {
            live_v.set_retired(false);
            let old = slot.current.swap(Some(live_v.clone()));
            // The old live version stops pooling, unless it stays on as the canary.
            if let Some(old) = &old
                && !canary_v.as_ref().is_some_and(|(c, _)| Arc::ptr_eq(c, old))
            {
                old.set_retired(true);
            }
            *slot.previous.lock() = old;
            changed = true;
        }
        let same_canary = match (slot.canary.load().as_ref(), &canary_v) {
            (None, None) => true,
            (Some(c), Some((v, t))) => Arc::ptr_eq(&c.version, v) && &c.tenants == t,
            _ => false,
        };
        if !same_canary {
            if let Some((v, _)) = &canary_v {
                v.set_retired(false);
            }
            let new_canary = canary_v.as_ref().map(|(v, _)| v.clone());
            let old = slot.canary.swap(canary_v.map(|(version, tenants)| Arc::new(CanaryVersion { version, tenants })));
            // A canary that is neither live nor the new canary stops filling its warm pool.
            let live_now = slot.current.load_full();
            if let Some(old) = old
                && !live_now.as_ref().is_some_and(|l| Arc::ptr_eq(l, &old.version))
                && !new_canary.as_ref().is_some_and(|n| Arc::ptr_eq(n, &old.version))
            {
                old.version.set_retired(true);
            }
            changed = true;
        }
        *slot.last_error.lock() = None;
        let live_now = slot.current.load_full().map(|v| v.version.to_string());
        if changed {
            // Breakers are per tenant, not per version: a new version (live or canary) starts with closed ones.
            slot.breaker.reset();
            self.rebuild_order();
            tracing::info!(
                plugin = %name,
                live = ?live_now,
                canary = ?slot.canary.load().as_ref().map(|c| c.version.version.to_string()),
                managed = live_v.is_some(),
                "plugin rollout applied"
            );
        }
        Ok(RolloutApplied {
            live: live_now,
            canary: slot.canary.load().as_ref().map(|c| c.version.version.to_string()),
            changed,
        })
    }

    /// The version `r` describes: one the slot holds already (same component and manifest), else a new one
    /// through the load gate.
    fn held_or_gated(&self, slot: &Slot, r: ReleaseRef<'_>) -> Result<Arc<PluginVersion>, RegistryError> {
        let hash = sha256_hex(r.component);
        let held = [
            slot.current.load_full(),
            slot.previous.lock().clone(),
            slot.canary.load().as_ref().map(|c| c.version.clone()),
        ];
        if let Some(v) = held.into_iter().flatten().find(|v| v.hash == hash && v.manifest == *r.manifest) {
            return Ok(v);
        }
        match self.gate(r.manifest.clone(), r.component) {
            Ok(v) => {
                slot.metrics.loads_ok.fetch_add(1, Ordering::Relaxed);
                Ok(Arc::new(v))
            }
            Err(e) => {
                self.refused(slot, &e);
                tracing::warn!(plugin = %slot.name, version = %r.manifest.version, error = %e, "rollout version refused; the node keeps what it runs");
                Err(e.into())
            }
        }
    }

    /// The gate alone: whether `manifest` and `component` would load here (compile, grants, world, fixtures),
    /// without loading them. What an upload runs before it is stored.
    pub fn check_release(&self, manifest: &Manifest, component: &[u8]) -> Result<String, RegistryError> {
        let v = self.gate(manifest.clone(), component)?;
        v.set_retired(true);
        Ok(v.hash.clone())
    }

    /// Records that a release of plugin `name` could not be applied here (a manifest this host cannot read, say):
    /// the plugin's `last_error`, which the node reports.
    pub fn refuse_release(&self, name: &str, why: &str) {
        let slot = self.slot_or_create(name);
        self.refused(&slot, &LoadError::Manifest(why.to_owned()));
    }
}
