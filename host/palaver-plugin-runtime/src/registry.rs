//! The plugin registry: the loaded plugins, each with its live and previous version, its breaker and counters;
//! loading through the gate off the hot path, atomic swaps, rollback, unload, the admin listing, per-tenant
//! choices and the metrics text. The call path (dispatch.rs) reads the live order with one atomic load.

use crate::breaker::Breakers;
use crate::config::RuntimeConfig;
use crate::error::{LoadError, RegistryError, RuntimeError};
use crate::fixtures;
use crate::manifest::{FailurePolicy, Hook, Manifest};
use crate::metrics::{self, PluginMetrics};
use crate::runtime::Runtime;
use crate::services::HostServices;
use crate::settings::{resolve, validate_values};
use crate::tenants::{TenantChoice, TenantTable};
use crate::version::{PluginVersion, sha256_hex};
use arc_swap::{ArcSwap, ArcSwapOption};
use palaver_core::TenantId;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One plugin, across its versions.
pub(crate) struct Slot {
    pub(crate) name: String,
    pub(crate) current: ArcSwapOption<PluginVersion>,
    pub(crate) previous: Mutex<Option<Arc<PluginVersion>>>,
    /// The manifest file it was loaded from, for `reload`.
    pub(crate) source: Mutex<Option<PathBuf>>,
    pub(crate) last_error: Mutex<Option<String>>,
    /// One breaker per tenant.
    pub(crate) breaker: Breakers,
    pub(crate) metrics: PluginMetrics,
    /// Failure policies set at run time, overriding the manifest's, by `Hook as usize`.
    pub(crate) policy: Mutex<[Option<FailurePolicy>; Hook::ALL.len()]>,
    /// A version some tenants run instead of `current` (a canary rollout).
    pub(crate) canary: ArcSwapOption<CanaryVersion>,
    /// Set while a cluster rollout decides the versions: directory scans leave the plugin alone.
    pub(crate) managed: AtomicBool,
}

/// A canary: the version and the tenants that run it.
pub(crate) struct CanaryVersion {
    pub(crate) version: Arc<PluginVersion>,
    pub(crate) tenants: BTreeSet<TenantId>,
}

impl Slot {
    /// The versions that run for some tenant: the live one and the canary.
    pub(crate) fn versions(&self) -> Vec<Arc<PluginVersion>> {
        self.current.load_full().into_iter().chain(self.canary.load().as_ref().map(|c| c.version.clone())).collect()
    }

    /// The version `tenant`'s calls run: the canary's for its tenants, else the live one.
    pub(crate) fn version_for(&self, tenant: TenantId) -> Option<Arc<PluginVersion>> {
        if let Some(c) = self.canary.load().as_ref()
            && c.tenants.contains(&tenant)
        {
            return Some(c.version.clone());
        }
        self.current.load_full()
    }

    /// The failure policy of `hook` for version `v`, before any tenant's choice.
    pub(crate) fn policy(&self, v: &PluginVersion, hook: Hook) -> FailurePolicy {
        self.policy.lock()[hook as usize].unwrap_or_else(|| v.manifest.policy(hook))
    }
}

/// What a load did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadOutcome {
    /// A new version went live; `replaced` names the version it replaced.
    Loaded { name: String, version: String, hash: String, replaced: Option<String> },
    /// The same component and manifest are live already; nothing changed.
    Unchanged { name: String, version: String },
}

/// The outcome of loading a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub loaded: Vec<LoadOutcome>,
    /// Manifests that were refused, with why.
    pub refused: Vec<(PathBuf, String)>,
}

/// A rollback that happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollback {
    pub name: String,
    pub from: String,
    pub to: String,
}

/// The loaded plugins and everything needed to run them.
pub struct PluginRegistry {
    pub(crate) rt: Runtime,
    slots: Arc<RwLock<BTreeMap<String, Arc<Slot>>>>,
    /// Slots with a live version, by priority then name: what the call path walks.
    pub(crate) order: ArcSwap<Vec<Arc<Slot>>>,
    pub(crate) tenants: TenantTable,
    dirs: Mutex<Vec<PathBuf>>,
    /// Loads run one at a time, so two reloads of a plugin never interleave their swaps.
    pub(crate) load_lock: Mutex<()>,
    pub(crate) requests: AtomicU64,
}

impl PluginRegistry {
    /// A registry with no plugins, and the engine and ticker it runs them on.
    pub fn new(config: RuntimeConfig, services: HostServices) -> Result<PluginRegistry, RuntimeError> {
        Ok(PluginRegistry {
            rt: Runtime::new(config, services)?,
            slots: Arc::new(RwLock::new(BTreeMap::new())),
            order: ArcSwap::from_pointee(Vec::new()),
            tenants: TenantTable::new(),
            dirs: Mutex::new(Vec::new()),
            load_lock: Mutex::new(()),
            requests: AtomicU64::new(0),
        })
    }

    /// The configuration the registry runs with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.rt.config
    }

    /// Whether the pooling allocator could be set up.
    pub fn pooling(&self) -> bool {
        self.rt.pooling
    }

    /// The engine's code-format id, the second half of the compile cache's key.
    pub fn engine_id(&self) -> &str {
        &self.rt.engine_id
    }

    pub(crate) fn slot(&self, name: &str) -> Result<Arc<Slot>, RegistryError> {
        self.slots.read().get(name).cloned().ok_or_else(|| RegistryError::UnknownPlugin(name.to_owned()))
    }

    pub(crate) fn slot_or_create(&self, name: &str) -> Arc<Slot> {
        if let Some(s) = self.slots.read().get(name) {
            return s.clone();
        }
        let mut slots = self.slots.write();
        slots
            .entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    name: name.to_owned(),
                    current: ArcSwapOption::empty(),
                    previous: Mutex::new(None),
                    source: Mutex::new(None),
                    last_error: Mutex::new(None),
                    breaker: Breakers::new(self.rt.config.breaker),
                    metrics: PluginMetrics::default(),
                    policy: Mutex::new([None; Hook::ALL.len()]),
                    canary: ArcSwapOption::empty(),
                    managed: AtomicBool::new(false),
                })
            })
            .clone()
    }

    pub(crate) fn rebuild_order(&self) {
        // A plugin with only a canary runs for the canary's tenants; its priority is then the canary's.
        let mut live: Vec<(i32, Arc<Slot>)> = self
            .slots
            .read()
            .values()
            .filter_map(|s| {
                let priority = match s.current.load_full() {
                    Some(v) => v.manifest.priority,
                    None => s.canary.load().as_ref()?.version.manifest.priority,
                };
                Some((priority, s.clone()))
            })
            .collect();
        live.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        self.order.store(Arc::new(live.into_iter().map(|(_, s)| s).collect()));
    }

    /// Loads every plugin in `dir` (each `*.toml` manifest with its component beside it) and remembers the
    /// directory for [`PluginRegistry::rescan`]. Of several versions of one plugin only the highest is loaded.
    pub fn load_dir(&self, dir: &Path) -> LoadReport {
        {
            let mut dirs = self.dirs.lock();
            if !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_owned());
            }
        }
        let mut report = LoadReport::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                report.refused.push((dir.to_owned(), LoadError::io(dir, e).to_string()));
                return report;
            }
        };
        let mut best: BTreeMap<String, (Vec<u64>, PathBuf)> = BTreeMap::new();
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let Some((name, version)) = peek_identity(&path) else {
                report.refused.push((path.clone(), "invalid manifest: no name or version".to_owned()));
                continue;
            };
            let key = version_key(&version);
            if best.get(&name).is_none_or(|(k, _)| key > *k) {
                best.insert(name, (key, path));
            }
        }
        for (name, (_, path)) in best {
            // A cluster rollout decides this plugin's versions; the directory's copy waits until it is handed back.
            if self.slot(&name).is_ok_and(|s| s.managed.load(Ordering::SeqCst)) {
                tracing::debug!(plugin = %name, path = %path.display(), "left to its rollout");
                continue;
            }
            match self.load_file(&path) {
                Ok(o) => report.loaded.push(o),
                Err(e) => report.refused.push((path, e.to_string())),
            }
        }
        report
    }

    /// Loads every remembered directory again: what the server does on SIGHUP. Unchanged plugins stay as they are.
    pub fn rescan(&self) -> LoadReport {
        let dirs = self.dirs.lock().clone();
        let mut report = LoadReport::default();
        for d in dirs {
            let r = self.load_dir(&d);
            report.loaded.extend(r.loaded);
            report.refused.extend(r.refused);
        }
        report
    }

    /// Loads the plugin described by a manifest file, with its component beside it.
    pub fn load_file(&self, manifest_path: &Path) -> Result<LoadOutcome, RegistryError> {
        let fail = |e: LoadError| {
            // A manifest that does not parse still names the plugin, most of the time: blame that plugin.
            if let Some((name, _)) = peek_identity(manifest_path)
                && let Ok(slot) = self.slot(&name)
            {
                self.refused(&slot, &e);
            }
            tracing::warn!(path = %manifest_path.display(), error = %e, "plugin refused");
            RegistryError::Load(e)
        };
        let manifest = Manifest::from_file(manifest_path).map_err(fail)?;
        if self.slot(&manifest.name).is_ok_and(|s| s.managed.load(Ordering::SeqCst)) {
            return Err(RegistryError::Managed(manifest.name));
        }
        let file = manifest
            .component
            .clone()
            .map_or_else(|| manifest_path.with_extension("wasm"), |c| manifest_path.with_file_name(c));
        let wasm = std::fs::read(&file).map_err(|e| fail(LoadError::io(&file, e)))?;
        self.install(manifest, &wasm, Some(manifest_path.to_owned()))
    }

    /// Loads a plugin from a manifest and component bytes (an admin upload).
    pub fn load_bytes(&self, manifest: Manifest, wasm: &[u8]) -> Result<LoadOutcome, RegistryError> {
        self.install(manifest, wasm, None)
    }

    /// Loads the plugin's manifest file again, e.g. after it was replaced in place.
    pub fn reload(&self, name: &str) -> Result<LoadOutcome, RegistryError> {
        let source = self.slot(name)?.source.lock().clone();
        let source = source.ok_or_else(|| RegistryError::NoSource(name.to_owned()))?;
        self.load_file(&source)
    }

    pub(crate) fn refused(&self, slot: &Slot, e: &LoadError) {
        *slot.last_error.lock() = Some(e.to_string());
        slot.metrics.loads_refused.fetch_add(1, Ordering::Relaxed);
    }

    fn install(&self, manifest: Manifest, wasm: &[u8], source: Option<PathBuf>) -> Result<LoadOutcome, RegistryError> {
        let _g = self.load_lock.lock();
        let slot = self.slot_or_create(&manifest.name);
        // Checked again under the lock: a rollout applied while this load waited for it keeps its versions.
        if slot.managed.load(Ordering::SeqCst) {
            return Err(RegistryError::Managed(manifest.name));
        }
        let hash = sha256_hex(wasm);
        if let Some(cur) = slot.current.load_full()
            && cur.hash == hash
            && cur.manifest == manifest
        {
            if source.is_some() {
                *slot.source.lock() = source;
            }
            // What was offered is what runs: an earlier refusal (a bad version since put back) no longer applies.
            *slot.last_error.lock() = None;
            return Ok(LoadOutcome::Unchanged { name: manifest.name, version: manifest.version });
        }
        let (name, version) = (manifest.name.clone(), manifest.version.clone());
        let started = std::time::Instant::now();
        let built = self.gate(manifest, wasm);
        let v = match built {
            Ok(v) => Arc::new(v),
            Err(e) => {
                self.refused(&slot, &e);
                tracing::warn!(plugin = %name, %version, error = %e, "plugin version refused; the live version stays");
                return Err(e.into());
            }
        };
        let old = slot.current.swap(Some(v.clone()));
        if let Some(old) = &old {
            old.set_retired(true);
        }
        *slot.previous.lock() = old.clone();
        if source.is_some() {
            *slot.source.lock() = source;
        }
        *slot.last_error.lock() = None;
        slot.breaker.reset();
        slot.metrics.loads_ok.fetch_add(1, Ordering::Relaxed);
        self.rebuild_order();
        let replaced = old.map(|o| o.version.to_string());
        let ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(plugin = %name, %version, hash = %v.hash, ?replaced, load_ms = ms, "plugin version live");
        Ok(LoadOutcome::Loaded { name, version, hash: v.hash.clone(), replaced })
    }

    /// The load gate: compile, check imports against grants and exports against the world, check stored tenant
    /// settings against the new schema, run the golden fixtures.
    pub(crate) fn gate(&self, manifest: Manifest, wasm: &[u8]) -> Result<PluginVersion, LoadError> {
        let v = PluginVersion::build(&self.rt, manifest, wasm)?;
        for (tenant, values) in self.tenants.settings_of(&v.manifest.name) {
            validate_values(&v.manifest.settings, &values)
                .map_err(|message| LoadError::TenantSettings { tenant: tenant.0, message })?;
        }
        fixtures::run_all(&self.rt, &v)?;
        Ok(v)
    }

    /// Puts the previous version back live (and keeps the current one as the new previous): one pointer swap,
    /// no gate, since that version passed it before.
    pub fn rollback(&self, name: &str) -> Result<Rollback, RegistryError> {
        let _g = self.load_lock.lock();
        let slot = self.slot(name)?;
        if slot.managed.load(Ordering::SeqCst) {
            return Err(RegistryError::Managed(name.to_owned()));
        }
        let prev = slot.previous.lock().take().ok_or_else(|| RegistryError::NoPrevious(name.to_owned()))?;
        prev.set_retired(false);
        let cur = slot.current.swap(Some(prev.clone()));
        if let Some(c) = &cur {
            c.set_retired(true);
        }
        let from = cur.as_ref().map(|c| c.version.to_string()).unwrap_or_default();
        *slot.previous.lock() = cur;
        slot.breaker.reset();
        self.rebuild_order();
        tracing::info!(plugin = %name, %from, to = %prev.version, "plugin rolled back");
        Ok(Rollback { name: name.to_owned(), from, to: prev.version.to_string() })
    }

    /// Removes a plugin; calls in flight finish on the version they hold.
    pub fn unload(&self, name: &str) -> Result<(), RegistryError> {
        let _g = self.load_lock.lock();
        let slot = self.slots.write().remove(name).ok_or_else(|| RegistryError::UnknownPlugin(name.to_owned()))?;
        if let Some(v) = slot.current.swap(None) {
            v.set_retired(true);
        }
        self.rebuild_order();
        Ok(())
    }

    /// Enables or disables a plugin for a tenant; `None` goes back to the manifest's default.
    pub fn set_enabled(&self, tenant: TenantId, name: &str, enabled: Option<bool>) -> Result<(), RegistryError> {
        self.slot(name)?;
        self.tenants.set_enabled(tenant, name, enabled);
        Ok(())
    }

    /// Sets a tenant's settings for a plugin (a JSON object, checked against the live version's schema);
    /// `None` goes back to the defaults.
    pub fn set_settings(&self, tenant: TenantId, name: &str, settings: Option<Value>) -> Result<(), RegistryError> {
        let slot = self.slot(name)?;
        if let Some(s) = &settings {
            for v in slot.versions() {
                validate_values(&v.manifest.settings, s)
                    .map_err(|message| RegistryError::Settings { plugin: name.to_owned(), message })?;
            }
        }
        self.tenants.set_settings(tenant, name, settings);
        Ok(())
    }

    /// The settings a call of the plugin for the tenant sees: defaults merged with the tenant's values.
    pub fn settings(&self, tenant: TenantId, name: &str) -> Result<Value, RegistryError> {
        let v = self.slot(name)?.version_for(tenant).ok_or_else(|| RegistryError::UnknownPlugin(name.to_owned()))?;
        Ok(Value::Object(resolve(&v.manifest.settings, self.tenants.settings(tenant, name).as_ref())))
    }

    /// What a tenant chose, plugin by plugin.
    pub fn tenant_choices(&self, tenant: TenantId) -> Vec<TenantChoice> {
        self.tenants.choices(tenant)
    }

    /// Checks a whole choice for a plugin the way the `set_*` calls would: the plugin is loaded, its settings fit
    /// the live version's schema, and each failure policy is one the hook allows.
    pub fn check_choice(&self, choice: &TenantChoice) -> Result<(), RegistryError> {
        let slot = self.slot(&choice.plugin)?;
        if let Some(s) = &choice.settings {
            for v in slot.versions() {
                validate_values(&v.manifest.settings, s)
                    .map_err(|message| RegistryError::Settings { plugin: choice.plugin.clone(), message })?;
            }
        }
        for (hook, policy) in &choice.failure {
            fixed_policy_allows(&choice.plugin, *hook, Some(*policy))?;
        }
        if let Some(list) = &choice.http_allow {
            http_allow_within(&slot, list)?;
        }
        Ok(())
    }

    /// Narrows (or, with `None`, restores) the hosts a plugin may reach over HTTP for a tenant: each entry must lie
    /// within the `[http] allow` of every version the plugin runs.
    pub fn set_tenant_http_allow(
        &self,
        tenant: TenantId,
        name: &str,
        list: Option<Vec<String>>,
    ) -> Result<(), RegistryError> {
        let slot = self.slot(name)?;
        if let Some(l) = &list {
            http_allow_within(&slot, l)?;
        }
        self.tenants.set_http_allow(tenant, name, list);
        Ok(())
    }

    /// The manifest's `[http] allow` of the version `tenant` runs: `None` when it has no `http` grant.
    pub fn http_allow(&self, tenant: TenantId, name: &str) -> Result<Option<Vec<String>>, RegistryError> {
        let v = self.slot(name)?.version_for(tenant).ok_or_else(|| RegistryError::UnknownPlugin(name.to_owned()))?;
        Ok(v.http.as_ref().and(v.manifest.http.as_ref()).map(|h| h.allow.clone()))
    }

    /// Replaces a tenant's whole choice for a plugin at once: a stored choice, replayed at start or made on another
    /// node. A plugin that is not loaded (yet) keeps the choice for when it is, and its load gate checks the
    /// settings against its schema then; a loaded one's choice is checked first ([`Self::check_choice`]).
    pub fn apply_choice(&self, tenant: TenantId, choice: &TenantChoice) -> Result<(), RegistryError> {
        if self.slot(&choice.plugin).is_ok() {
            self.check_choice(choice)?;
        }
        self.tenants.replace(tenant, choice);
        Ok(())
    }

    /// What a fault of `slot`'s `hook` means for `tenant`: the tenant's choice, else the plugin-wide override,
    /// else the manifest's, else the hook's default (closed).
    pub(crate) fn policy_for(&self, slot: &Slot, v: &PluginVersion, hook: Hook, tenant: TenantId) -> FailurePolicy {
        self.tenants.failure(tenant, &slot.name, hook).unwrap_or_else(|| slot.policy(v, hook))
    }

    /// The failure policy each hook that runs of the version `tenant` runs has for it, all choices applied.
    pub fn failure_policies(&self, tenant: TenantId, name: &str) -> Result<Vec<(Hook, FailurePolicy)>, RegistryError> {
        let slot = self.slot(name)?;
        let v = slot.version_for(tenant).ok_or_else(|| RegistryError::UnknownPlugin(name.to_owned()))?;
        Ok(v.manifest.running_hooks().into_iter().map(|h| (h, self.policy_for(&slot, &v, h, tenant))).collect())
    }

    /// Sets (or, with `None`, clears) a tenant's failure policy for a plugin's hook: whether a fault lets the
    /// tenant's messages (or commands) through or refuses them with a retryable 503.
    pub fn set_tenant_failure_policy(
        &self,
        tenant: TenantId,
        name: &str,
        hook: Hook,
        p: Option<FailurePolicy>,
    ) -> Result<(), RegistryError> {
        self.slot(name)?;
        fixed_policy_allows(name, hook, p)?;
        self.tenants.set_failure(tenant, name, hook, p);
        Ok(())
    }

    /// Overrides (or, with `None`, restores) the manifest's failure policy of a plugin's hook.
    pub fn set_failure_policy(&self, name: &str, hook: Hook, p: Option<FailurePolicy>) -> Result<(), RegistryError> {
        let slot = self.slot(name)?;
        fixed_policy_allows(name, hook, p)?;
        slot.policy.lock()[hook as usize] = p;
        Ok(())
    }

    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().values().cloned().collect()
    }

    /// Every counter and histogram in the OpenMetrics text format, under `palaver_plugin_*` (what the node's
    /// `/metrics` shows of the plugins).
    pub fn render_metrics(&self) -> String {
        palaver_core::render_metrics(self)
    }
}

/// Checks a tenant's HTTP allow-list against every version of the plugin that runs: each must grant `http`, and
/// each entry must lie within its `[http] allow`. (A later version with a narrower list is not refused for it: a
/// request must match both lists, so the tenant's can only narrow.)
fn http_allow_within(slot: &Slot, list: &[String]) -> Result<(), RegistryError> {
    let refuse = |message: String| RegistryError::HttpAllow { plugin: slot.name.clone(), message };
    for v in slot.versions() {
        let Some(policy) = &v.http else {
            return Err(refuse(format!("version {} makes no HTTP requests (no \"http\" grant)", v.version)));
        };
        policy.allow.check_within(list).map_err(refuse)?;
    }
    Ok(())
}

/// Refuses a policy other than the one `hook` always has (`before-push` fails open; `scan-file` and the
/// listeners closed).
fn fixed_policy_allows(name: &str, hook: Hook, p: Option<FailurePolicy>) -> Result<(), RegistryError> {
    match (hook.fixed_policy(), p) {
        (Some(fixed), Some(p)) if fixed != p => Err(match hook {
            Hook::ScanFile => RegistryError::ScanFailsClosed(name.to_owned()),
            Hook::AfterPublish | Hook::OnAccount => RegistryError::ListenerFailsClosed(name.to_owned()),
            _ => RegistryError::PushFailsOpen(name.to_owned()),
        }),
        _ => Ok(()),
    }
}

/// Reads the plugins' counters on each scrape: plugins come and go at run time.
struct Collector(Arc<RwLock<BTreeMap<String, Arc<Slot>>>>);

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginCollector")
    }
}

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, encoder: prometheus_client::encoding::DescriptorEncoder<'_>) -> std::fmt::Result {
        let slots: Vec<Arc<Slot>> = self.0.read().values().cloned().collect();
        let versions: Vec<Option<Arc<PluginVersion>>> = slots.iter().map(|s| s.current.load_full()).collect();
        let rows: Vec<metrics::Row<'_>> = slots
            .iter()
            .zip(&versions)
            .map(|(s, v)| metrics::Row {
                name: &s.name,
                version: v.as_ref().map(|v| &*v.version),
                hash: v.as_ref().map(|v| v.hash.as_str()),
                breaker_open: s.breaker.open(),
                breaker_trips: s.breaker.trips(),
                instantiations: v.as_ref().map_or(0, |v| v.instantiations.load(Ordering::Relaxed)),
                http: v.as_ref().is_some_and(|v| v.http.is_some()),
                metrics: &s.metrics,
            })
            .collect();
        metrics::encode(&rows, encoder)
    }
}

/// The registry's metrics in the node's one registry, read on each scrape.
impl palaver_core::MetricsSource for PluginRegistry {
    fn register(&self, registry: &mut palaver_core::Registry) {
        registry.register_collector(Box::new(Collector(self.slots.clone())));
    }
}

/// The name and version a manifest file declares, read leniently so that a broken manifest can still be blamed
/// on its plugin.
pub(crate) fn peek_identity(path: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    Some((table.get("name")?.as_str()?.to_owned(), table.get("version")?.as_str()?.to_owned()))
}

/// A version's numeric parts, for picking the highest of several.
fn version_key(v: &str) -> Vec<u64> {
    let core = v.split_once('-').map_or(v, |(c, _)| c);
    core.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}
