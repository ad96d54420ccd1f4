//! Per-tenant plugin choices: whether a plugin is enabled for a tenant, the tenant's settings for it and, per hook,
//! whether a fault of the plugin lets the tenant's messages and commands through (fail-open) or refuses them. Kept in
//! memory behind a copy-on-write snapshot, so the publish path reads it without a lock. The server stores each change
//! (the `PluginChoiceStore` port) and replays stored choices here, at start and as other nodes make them.

use crate::http::AllowList;
use crate::manifest::{FailurePolicy, Hook};
use arc_swap::ArcSwap;
use palaver_core::TenantId;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Default)]
struct Entry {
    enabled: Option<bool>,
    settings: Option<Value>,
    /// By `Hook as usize`.
    failure: [Option<FailurePolicy>; Hook::ALL.len()],
    /// The tenant's narrowing of the plugin's HTTP allow-list: as written, and parsed.
    http_allow: Option<(Vec<String>, Arc<AllowList>)>,
}

/// A tenant's HTTP allow-list as the calls read it. An entry that does not parse (a stored choice for a plugin not
/// loaded yet, so never checked) allows nothing: it fails closed.
fn http_entry(list: Option<&Vec<String>>) -> Option<(Vec<String>, Arc<AllowList>)> {
    list.map(|l| (l.clone(), Arc::new(AllowList::parse(l).unwrap_or_default())))
}

type Table = HashMap<TenantId, HashMap<String, Entry>>;

/// What a tenant chose for one plugin, as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantChoice {
    pub plugin: String,
    /// `None`: the manifest's `enabled_by_default` applies.
    pub enabled: Option<bool>,
    /// The tenant's own values, before defaults are merged in.
    pub settings: Option<Value>,
    /// The failure policies the tenant chose, by hook; a hook left out follows the plugin's.
    pub failure: BTreeMap<Hook, FailurePolicy>,
    /// The hosts the plugin may reach over HTTP for this tenant, each within the manifest's `[http] allow`;
    /// `None`: the manifest's list.
    pub http_allow: Option<Vec<String>>,
}

/// The table of tenant choices.
pub(crate) struct TenantTable {
    snapshot: ArcSwap<Table>,
    /// Serialises writers; readers never wait.
    write: Mutex<()>,
    /// Bumped by every settings change, so cached resolved settings know they are stale.
    generation: AtomicU64,
}

impl TenantTable {
    pub(crate) fn new() -> TenantTable {
        TenantTable {
            snapshot: ArcSwap::from_pointee(Table::new()),
            write: Mutex::new(()),
            generation: AtomicU64::new(0),
        }
    }

    fn update(&self, tenant: TenantId, plugin: &str, f: impl FnOnce(&mut Entry)) {
        let _g = self.write.lock();
        let mut table = Table::clone(&self.snapshot.load());
        f(table.entry(tenant).or_default().entry(plugin.to_owned()).or_default());
        self.snapshot.store(Arc::new(table));
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether `plugin` runs for `tenant`.
    pub(crate) fn enabled(&self, tenant: TenantId, plugin: &str, default: bool) -> bool {
        self.snapshot.load().get(&tenant).and_then(|t| t.get(plugin)).and_then(|e| e.enabled).unwrap_or(default)
    }

    pub(crate) fn set_enabled(&self, tenant: TenantId, plugin: &str, enabled: Option<bool>) {
        self.update(tenant, plugin, |e| e.enabled = enabled);
    }

    /// The tenant's own values for `plugin`.
    pub(crate) fn settings(&self, tenant: TenantId, plugin: &str) -> Option<Value> {
        self.snapshot.load().get(&tenant).and_then(|t| t.get(plugin)).and_then(|e| e.settings.clone())
    }

    pub(crate) fn set_settings(&self, tenant: TenantId, plugin: &str, settings: Option<Value>) {
        self.update(tenant, plugin, |e| e.settings = settings);
    }

    /// Replaces `tenant`'s whole choice for `plugin` in one change.
    pub(crate) fn replace(&self, tenant: TenantId, choice: &TenantChoice) {
        self.update(tenant, &choice.plugin, |e| {
            e.enabled = choice.enabled;
            e.settings = choice.settings.clone();
            e.failure = [None; Hook::ALL.len()];
            for (hook, policy) in &choice.failure {
                e.failure[*hook as usize] = Some(*policy);
            }
            e.http_allow = http_entry(choice.http_allow.as_ref());
        });
    }

    /// The tenant's own HTTP allow-list for `plugin`, if it narrowed the manifest's.
    pub(crate) fn http_allow(&self, tenant: TenantId, plugin: &str) -> Option<Arc<AllowList>> {
        let table = self.snapshot.load();
        table.get(&tenant).and_then(|t| t.get(plugin)).and_then(|e| e.http_allow.as_ref().map(|(_, l)| l.clone()))
    }

    pub(crate) fn set_http_allow(&self, tenant: TenantId, plugin: &str, list: Option<Vec<String>>) {
        self.update(tenant, plugin, |e| e.http_allow = http_entry(list.as_ref()));
    }

    /// The failure policy `tenant` chose for `plugin`'s `hook`, if it chose one.
    pub(crate) fn failure(&self, tenant: TenantId, plugin: &str, hook: Hook) -> Option<FailurePolicy> {
        self.snapshot.load().get(&tenant).and_then(|t| t.get(plugin)).and_then(|e| e.failure[hook as usize])
    }

    pub(crate) fn set_failure(&self, tenant: TenantId, plugin: &str, hook: Hook, policy: Option<FailurePolicy>) {
        self.update(tenant, plugin, |e| e.failure[hook as usize] = policy);
    }

    /// Every tenant's own values for `plugin`, to check them against a new version's schema.
    pub(crate) fn settings_of(&self, plugin: &str) -> Vec<(TenantId, Value)> {
        let table = self.snapshot.load();
        let mut out: Vec<(TenantId, Value)> =
            table.iter().filter_map(|(t, m)| m.get(plugin).and_then(|e| e.settings.clone()).map(|s| (*t, s))).collect();
        out.sort_by_key(|(t, _)| *t);
        out
    }

    /// What `tenant` chose, by plugin name.
    pub(crate) fn choices(&self, tenant: TenantId) -> Vec<TenantChoice> {
        let table = self.snapshot.load();
        let mut out: Vec<TenantChoice> = table
            .get(&tenant)
            .map(|m| {
                m.iter()
                    .map(|(p, e)| TenantChoice {
                        plugin: p.clone(),
                        enabled: e.enabled,
                        settings: e.settings.clone(),
                        failure: Hook::ALL.into_iter().filter_map(|h| e.failure[h as usize].map(|f| (h, f))).collect(),
                        http_allow: e.http_allow.as_ref().map(|(l, _)| l.clone()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        out
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// Resolved settings per tenant for one plugin version, valid while the table's generation is unchanged: the
/// publish path then serialises nothing.
#[derive(Default)]
pub(crate) struct SettingsCache {
    entries: Mutex<HashMap<TenantId, (u64, Arc<str>)>>,
}

impl SettingsCache {
    pub(crate) fn get_or(&self, tenant: TenantId, generation: u64, make: impl FnOnce() -> String) -> Arc<str> {
        if let Some((g, s)) = self.entries.lock().get(&tenant)
            && *g == generation
        {
            return s.clone();
        }
        let s: Arc<str> = Arc::from(make());
        let mut entries = self.entries.lock();
        // A tenant table that changes often must not grow the cache without bound.
        if entries.len() > 10_000 {
            entries.clear();
        }
        entries.insert(tenant, (generation, s.clone()));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn choices_override_the_default_per_tenant() {
        let t = TenantTable::new();
        assert!(t.enabled(TenantId(1), "m", true));
        assert!(!t.enabled(TenantId(1), "m", false));
        t.set_enabled(TenantId(1), "m", Some(false));
        assert!(!t.enabled(TenantId(1), "m", true));
        assert!(t.enabled(TenantId(2), "m", true), "another tenant is unaffected");
        t.set_enabled(TenantId(1), "m", None);
        assert!(t.enabled(TenantId(1), "m", true));
    }

    #[test]
    fn failure_choices_are_per_tenant_and_hook() {
        let t = TenantTable::new();
        t.set_failure(TenantId(1), "m", Hook::BeforePublish, Some(FailurePolicy::Open));
        assert_eq!(t.failure(TenantId(1), "m", Hook::BeforePublish), Some(FailurePolicy::Open));
        assert_eq!(t.failure(TenantId(1), "m", Hook::OnCommand), None);
        assert_eq!(t.failure(TenantId(2), "m", Hook::BeforePublish), None);
        let c = t.choices(TenantId(1));
        assert_eq!(c[0].failure, [(Hook::BeforePublish, FailurePolicy::Open)].into_iter().collect());
    }

    #[test]
    fn settings_bump_the_generation_and_are_listed_per_plugin() {
        let t = TenantTable::new();
        let g0 = t.generation();
        t.set_settings(TenantId(2), "m", Some(json!({ "a": 1 })));
        t.set_settings(TenantId(1), "m", Some(json!({ "a": 2 })));
        t.set_settings(TenantId(1), "other", Some(json!({})));
        assert!(t.generation() > g0);
        assert_eq!(t.settings_of("m"), vec![(TenantId(1), json!({ "a": 2 })), (TenantId(2), json!({ "a": 1 }))]);
        assert_eq!(t.choices(TenantId(1)).len(), 2);
    }

    #[test]
    fn http_lists_are_per_tenant_and_fail_closed() {
        let t = TenantTable::new();
        assert!(t.http_allow(TenantId(1), "m").is_none());
        t.set_http_allow(TenantId(1), "m", Some(vec!["a.example".to_owned()]));
        assert!(t.http_allow(TenantId(1), "m").is_some_and(|l| !l.is_empty()));
        assert!(t.http_allow(TenantId(2), "m").is_none());
        assert_eq!(t.choices(TenantId(1))[0].http_allow, Some(vec!["a.example".to_owned()]));
        // Never checked (its plugin was not loaded): it parses to nothing, so it allows nothing.
        t.set_http_allow(TenantId(1), "m", Some(vec!["not a host".to_owned()]));
        assert!(t.http_allow(TenantId(1), "m").is_some_and(|l| l.is_empty()));
        t.set_http_allow(TenantId(1), "m", None);
        assert!(t.http_allow(TenantId(1), "m").is_none());
    }

    #[test]
    fn the_cache_recomputes_after_a_change() {
        let c = SettingsCache::default();
        assert_eq!(&*c.get_or(TenantId(1), 1, || "a".to_owned()), "a");
        assert_eq!(&*c.get_or(TenantId(1), 1, || "b".to_owned()), "a");
        assert_eq!(&*c.get_or(TenantId(1), 2, || "c".to_owned()), "c");
    }
}
