//! The admin view of the registry: one [`PluginInfo`] per plugin with its live version, hash, state, last load
//! error and call and fault counts. The server serves `list()` as JSON at `GET /v1/admin/plugins`.

use crate::error::FaultKind;
use crate::manifest::{Grant, Hook, InstanceMode, Manifest, World};
use crate::registry::{PluginRegistry, Slot};
use palaver_core::TenantId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Whether a plugin is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginState {
    /// A version is live and no tenant's breaker is open.
    Active,
    /// A version is live but the breaker of at least one tenant (`breakers_open` says how many) keeps it off for
    /// that tenant until the cool-down ends (or a trial call is running); other tenants keep calling it.
    BreakerOpen,
    /// No version is live: every load so far was refused.
    Failed,
}

/// Counters of one hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HookCounts {
    pub calls: u64,
    pub faults: u64,
    /// Calls skipped because the breaker was open.
    pub skipped: u64,
    /// Faults by kind; kinds that never happened are left out.
    pub faults_by_kind: BTreeMap<FaultKind, u64>,
}

/// One plugin as `GET /v1/admin/plugins` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginInfo {
    pub name: String,
    /// The live version, if any.
    pub version: Option<String>,
    /// The live component's SHA-256.
    pub hash: Option<String>,
    pub state: PluginState,
    /// `closed` when no tenant's breaker is open, else `open`.
    pub breaker: &'static str,
    /// Tenants whose breaker is open or half-open.
    pub breakers_open: usize,
    /// Why the latest load was refused; cleared by the next successful one, or by offering the live version again.
    pub last_error: Option<String>,
    /// The version a rollback would bring back.
    pub previous_version: Option<String>,
    /// The latest fault of a call, with what the plugin logged at error level before it (a panic's message):
    /// `"<version> <hook>: <fault>"`. Kept after the plugin is healthy again; `last_error` is about loads.
    pub last_fault: Option<String>,
    /// Whether a cluster rollout decides its versions (directory scans then leave it alone).
    pub managed: bool,
    /// A version some tenants run instead of the live one.
    pub canary_version: Option<String>,
    /// The tenants that run the canary.
    pub canary_tenants: Vec<u64>,
    pub world: Option<World>,
    /// The hooks that run: the world's, and in worlds `gate` and `listener` those the manifest names.
    pub hooks: Vec<Hook>,
    pub grants: Vec<Grant>,
    pub instance_mode: Option<InstanceMode>,
    pub priority: Option<i32>,
    pub enabled_by_default: Option<bool>,
    /// When the live version went live, in Unix milliseconds.
    pub loaded_at_ms: Option<u64>,
    /// The manifest file it came from.
    pub source: Option<String>,
    /// Calls and faults over every hook, across versions.
    pub calls: u64,
    pub faults: u64,
    pub before_publish: HookCounts,
    pub on_command: HookCounts,
    pub before_push: HookCounts,
    pub scan_file: HookCounts,
    pub after_publish: HookCounts,
    pub on_account: HookCounts,
    pub on_login: HookCounts,
    pub before_subscribe: HookCounts,
    pub loads: u64,
    pub load_refusals: u64,
    /// Instances created for the live version (fixtures included): with warm instances far fewer than calls.
    pub instantiations: u64,
}

fn counts(slot: &Slot, hook: Hook) -> HookCounts {
    let m = slot.metrics.hook(hook);
    HookCounts {
        calls: m.calls.load(Ordering::Relaxed),
        faults: m.faults(),
        skipped: m.skipped.load(Ordering::Relaxed),
        faults_by_kind: FaultKind::ALL.into_iter().map(|k| (k, m.faults_of(k))).filter(|(_, n)| *n > 0).collect(),
    }
}

fn info(slot: &Slot) -> PluginInfo {
    let v = slot.current.load_full();
    let canary = slot.canary.load_full();
    let manifest = v.as_ref().map(|v| &v.manifest);
    let breakers_open = slot.breaker.open();
    let breaker = if breakers_open == 0 { "closed" } else { "open" };
    let state = match (&v, breakers_open) {
        (None, _) => PluginState::Failed,
        (Some(_), 0) => PluginState::Active,
        (Some(_), _) => PluginState::BreakerOpen,
    };
    let (bp, oc, push) =
        (counts(slot, Hook::BeforePublish), counts(slot, Hook::OnCommand), counts(slot, Hook::BeforePush));
    let scan = counts(slot, Hook::ScanFile);
    let (after_publish, on_account) = (counts(slot, Hook::AfterPublish), counts(slot, Hook::OnAccount));
    let (on_login, before_subscribe) = (counts(slot, Hook::OnLogin), counts(slot, Hook::BeforeSubscribe));
    let later = [&after_publish, &on_account, &on_login, &before_subscribe];
    PluginInfo {
        name: slot.name.clone(),
        version: v.as_ref().map(|v| v.version.to_string()),
        hash: v.as_ref().map(|v| v.hash.clone()),
        state,
        breaker,
        breakers_open,
        last_error: slot.last_error.lock().clone(),
        previous_version: slot.previous.lock().as_ref().map(|p| p.version.to_string()),
        last_fault: slot.metrics.last_fault.lock().clone(),
        managed: slot.managed.load(Ordering::SeqCst),
        canary_version: canary.as_ref().map(|c| c.version.version.to_string()),
        canary_tenants: canary.as_ref().map(|c| c.tenants.iter().map(|t| t.0).collect()).unwrap_or_default(),
        world: manifest.map(|m| m.world),
        hooks: manifest.map(Manifest::running_hooks).unwrap_or_default(),
        grants: manifest.map(|m| m.grants.clone()).unwrap_or_default(),
        instance_mode: manifest.map(|m| m.instance.mode),
        priority: manifest.map(|m| m.priority),
        enabled_by_default: manifest.map(|m| m.enabled_by_default),
        loaded_at_ms: v.as_ref().map(|v| v.loaded_at_ms),
        source: slot.source.lock().as_ref().map(|p| p.display().to_string()),
        calls: bp.calls + oc.calls + push.calls + scan.calls + later.iter().map(|c| c.calls).sum::<u64>(),
        faults: bp.faults + oc.faults + push.faults + scan.faults + later.iter().map(|c| c.faults).sum::<u64>(),
        before_publish: bp,
        on_command: oc,
        before_push: push,
        scan_file: scan,
        after_publish,
        on_account,
        on_login,
        before_subscribe,
        loads: slot.metrics.loads_ok.load(Ordering::Relaxed),
        load_refusals: slot.metrics.loads_refused.load(Ordering::Relaxed),
        instantiations: v.as_ref().map_or(0, |v| v.instantiations.load(Ordering::Relaxed)),
    }
}

impl PluginRegistry {
    /// Every plugin, by name: what `GET /v1/admin/plugins` returns.
    pub fn list(&self) -> Vec<PluginInfo> {
        self.slots().iter().map(|s| info(s)).collect()
    }

    /// One plugin, or `None`.
    pub fn info(&self, name: &str) -> Option<PluginInfo> {
        self.slot(name).ok().map(|s| info(&s))
    }

    /// The state of one tenant's breaker for a plugin: `closed`, `open` or `half-open`; `None` for no such plugin.
    pub fn breaker(&self, name: &str, tenant: TenantId) -> Option<&'static str> {
        self.slot(name).ok().map(|s| s.breaker.state(tenant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_serialises_with_stable_names() {
        let i = PluginInfo {
            name: "m".to_owned(),
            version: Some("1.0.0".to_owned()),
            hash: Some("ab".to_owned()),
            state: PluginState::BreakerOpen,
            breaker: "open",
            breakers_open: 1,
            last_error: None,
            previous_version: None,
            last_fault: None,
            managed: false,
            canary_version: None,
            canary_tenants: Vec::new(),
            world: Some(World::PublishFilter),
            hooks: vec![Hook::BeforePublish],
            grants: vec![Grant::Log],
            instance_mode: Some(InstanceMode::Warm),
            priority: Some(100),
            enabled_by_default: Some(true),
            loaded_at_ms: Some(1),
            source: None,
            calls: 3,
            faults: 1,
            before_publish: HookCounts {
                calls: 3,
                faults: 1,
                skipped: 0,
                faults_by_kind: [(FaultKind::OutputSize, 1)].into_iter().collect(),
            },
            on_command: HookCounts::default(),
            before_push: HookCounts::default(),
            scan_file: HookCounts::default(),
            after_publish: HookCounts::default(),
            on_account: HookCounts::default(),
            on_login: HookCounts::default(),
            before_subscribe: HookCounts::default(),
            loads: 1,
            load_refusals: 0,
            instantiations: 2,
        };
        let v = serde_json::to_value(&i).unwrap();
        assert_eq!(v["state"], "breaker-open");
        assert_eq!(v["world"], "publish-filter");
        assert_eq!(v["hooks"][0], "before-publish");
        assert_eq!(v["instance_mode"], "warm");
        assert_eq!(v["before_publish"]["faults_by_kind"]["output-size"], 1);
    }
}
