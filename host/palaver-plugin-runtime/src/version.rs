//! One loaded version of a plugin: its manifest, content hash, compiled component and pre-instantiated
//! `InstancePre`, built through the load gate. The gate refuses anything that is not a component, imports more
//! than its manifest grants, imports what the host does not provide, or exports another world than it declares.

use crate::bindings::{
    self, PACKAGE, VERSION, after_publish, before_publish, before_push, before_subscribe, on_account, on_command,
    on_login, scan_file,
};
use crate::config::Limits;
use crate::error::LoadError;
use crate::http::HttpPolicy;
use crate::instance::Live;
use crate::manifest::{Grant, Hook, Manifest};
use crate::runtime::Runtime;
use crate::store::StoreData;
use crate::tenants::SettingsCache;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::{Component, InstancePre};

/// A plugin version that passed the gate (fixtures are run on it before it goes live).
pub(crate) struct PluginVersion {
    pub(crate) manifest: Manifest,
    pub(crate) name: Arc<str>,
    pub(crate) version: Arc<str>,
    /// SHA-256 of the component, hex.
    pub(crate) hash: String,
    pub(crate) loaded_at_ms: u64,
    pub(crate) pre: InstancePre<StoreData>,
    pub(crate) publish: Option<before_publish::GuestIndices>,
    pub(crate) command: Option<on_command::GuestIndices>,
    pub(crate) push: Option<before_push::GuestIndices>,
    pub(crate) scan: Option<scan_file::GuestIndices>,
    pub(crate) published: Option<after_publish::GuestIndices>,
    pub(crate) account: Option<on_account::GuestIndices>,
    pub(crate) login: Option<on_login::GuestIndices>,
    pub(crate) join: Option<before_subscribe::GuestIndices>,
    pub(crate) publish_limits: Limits,
    pub(crate) command_limits: Limits,
    pub(crate) push_limits: Limits,
    pub(crate) scan_limits: Limits,
    /// Of `on-login` and `before-subscribe`.
    pub(crate) gate_limits: Limits,
    /// Of `after-publish` and `on-account`.
    pub(crate) listener_limits: Limits,
    /// Idle warm instances of this version; they die with it.
    pub(crate) warm: Mutex<Vec<Live>>,
    /// Instances created for this version, warm or not.
    pub(crate) instantiations: AtomicU64,
    /// Set while the version is not live, so that calls still finishing on it do not refill its warm pool.
    pub(crate) retired: AtomicBool,
    /// Each tenant's resolved settings for this version's schema.
    pub(crate) settings_cache: SettingsCache,
    /// The checked `[http]` section, with the `http` grant.
    pub(crate) http: Option<Arc<HttpPolicy>>,
}

/// The SHA-256 of `bytes`, hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl PluginVersion {
    /// Runs the load gate on `wasm` described by `manifest`.
    pub(crate) fn build(rt: &Runtime, manifest: Manifest, wasm: &[u8]) -> Result<PluginVersion, LoadError> {
        let hash = sha256_hex(wasm);
        if let Some(expected) = &manifest.sha256
            && !expected.eq_ignore_ascii_case(&hash)
        {
            return Err(LoadError::HashMismatch { expected: expected.clone(), actual: hash });
        }
        // Checked again here: an upload's manifest, or one a test edited, may not have been parsed from text.
        let http = manifest.http_policy()?.map(Arc::new);
        let component = rt.compile(wasm)?;
        check_imports(&component, &rt.engine, &manifest.grants)?;
        check_exports(&component, &rt.engine, manifest.world.hooks())?;
        let linker = bindings::linker(&rt.engine, &manifest.grants).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let link = |e: wasmtime::Error| LoadError::WorldMismatch(format!("{e:#}"));
        let publish = manifest
            .has_hook(Hook::BeforePublish)
            .then(|| before_publish::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let command = manifest
            .has_hook(Hook::OnCommand)
            .then(|| on_command::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let push = manifest
            .has_hook(Hook::BeforePush)
            .then(|| before_push::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let scan =
            manifest.has_hook(Hook::ScanFile).then(|| scan_file::GuestIndices::new(&pre)).transpose().map_err(link)?;
        let published = manifest
            .has_hook(Hook::AfterPublish)
            .then(|| after_publish::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let account = manifest
            .has_hook(Hook::OnAccount)
            .then(|| on_account::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let login =
            manifest.has_hook(Hook::OnLogin).then(|| on_login::GuestIndices::new(&pre)).transpose().map_err(link)?;
        let join = manifest
            .has_hook(Hook::BeforeSubscribe)
            .then(|| before_subscribe::GuestIndices::new(&pre))
            .transpose()
            .map_err(link)?;
        let mut publish_limits = rt.config.publish_limits.with_overrides(&manifest.limits);
        let mut command_limits = rt.config.command_limits.with_overrides(&manifest.limits);
        let mut push_limits = rt.config.push_limits.with_overrides(&manifest.limits);
        let mut scan_limits = rt.config.scan_limits.with_overrides(&manifest.limits);
        let mut gate_limits = rt.config.gate_limits.with_overrides(&manifest.limits);
        let mut listener_limits = rt.config.listener_limits.with_overrides(&manifest.limits);
        // A pool slot cannot hold more memory than it was sized for; cap the plugin's limit at the slot size.
        if let Some(p) = rt.config.pooling.filter(|_| rt.pooling) {
            publish_limits.memory_bytes = publish_limits.memory_bytes.min(p.max_memory_bytes);
            command_limits.memory_bytes = command_limits.memory_bytes.min(p.max_memory_bytes);
            push_limits.memory_bytes = push_limits.memory_bytes.min(p.max_memory_bytes);
            scan_limits.memory_bytes = scan_limits.memory_bytes.min(p.max_memory_bytes);
            gate_limits.memory_bytes = gate_limits.memory_bytes.min(p.max_memory_bytes);
            listener_limits.memory_bytes = listener_limits.memory_bytes.min(p.max_memory_bytes);
        }
        Ok(PluginVersion {
            name: Arc::from(manifest.name.as_str()),
            version: Arc::from(manifest.version.as_str()),
            manifest,
            hash,
            loaded_at_ms: rt.services.clock.now_ms(),
            pre,
            publish,
            command,
            push,
            scan,
            published,
            account,
            login,
            join,
            publish_limits,
            command_limits,
            push_limits,
            scan_limits,
            gate_limits,
            listener_limits,
            warm: Mutex::new(Vec::new()),
            instantiations: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            settings_cache: SettingsCache::default(),
            http,
        })
    }

    /// The limits of calls to `hook`.
    pub(crate) fn limits(&self, hook: Hook) -> Limits {
        match hook {
            Hook::BeforePublish => self.publish_limits,
            Hook::OnCommand => self.command_limits,
            Hook::BeforePush => self.push_limits,
            Hook::ScanFile => self.scan_limits,
            Hook::OnLogin | Hook::BeforeSubscribe => self.gate_limits,
            Hook::AfterPublish | Hook::OnAccount => self.listener_limits,
        }
    }

    /// Takes the version out of service (or back in, on rollback); retiring drops its idle warm instances.
    pub(crate) fn set_retired(&self, retired: bool) {
        self.retired.store(retired, Ordering::SeqCst);
        if retired {
            self.warm.lock().clear();
        }
    }

    pub(crate) fn count_instantiation(&self) {
        self.instantiations.fetch_add(1, Ordering::Relaxed);
    }
}

/// A version as (major, minor, patch).
type Semver = (u64, u64, u64);

/// A `palaver:plugin/<interface>@<version>` name, split; `None` for any other package.
fn parse_name(name: &str) -> Option<(&str, Option<Semver>)> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    let (iface, version) = match rest.split_once('@') {
        Some((i, v)) => (i, Some(v)),
        None => (rest, None),
    };
    let version = version.map(|v| {
        let mut it = v.split(['.', '-', '+']).map(|p| p.parse::<u64>().unwrap_or(u64::MAX));
        (it.next().unwrap_or(u64::MAX), it.next().unwrap_or(u64::MAX), it.next().unwrap_or(u64::MAX))
    });
    Some((iface, version))
}

/// Whether a guest built against `v` runs on this host: the same 0.x minor, and no newer patch than the host's,
/// since a newer patch may add imports the host lacks.
fn compatible(v: Option<Semver>) -> bool {
    v.is_some_and(|(major, minor, patch)| major == VERSION.0 && minor == VERSION.1 && patch <= VERSION.2)
}

fn version_text() -> String {
    format!("{}.{}.{}", VERSION.0, VERSION.1, VERSION.2)
}

/// Every import must be a host interface of a compatible version, and granted (the shared `types` always is).
pub(crate) fn check_imports(component: &Component, engine: &Engine, grants: &[Grant]) -> Result<(), LoadError> {
    let ty = component.component_type();
    for (name, _) in ty.imports(engine) {
        let Some((iface, version)) = parse_name(name) else {
            return Err(LoadError::UnsupportedImport(format!("`{name}`: the host provides only {PACKAGE} (no WASI)")));
        };
        if !compatible(version) {
            return Err(LoadError::UnsupportedImport(format!(
                "`{name}`: the host implements {PACKAGE}@{}",
                version_text()
            )));
        }
        if iface == "types" {
            continue;
        }
        match Grant::from_interface(iface) {
            Some(g) if grants.contains(&g) => {}
            Some(_) => {
                return Err(LoadError::NotGranted(format!("`{name}`: add \"{iface}\" to the manifest's grants")));
            }
            None => return Err(LoadError::UnsupportedImport(format!("`{name}`: no such host interface"))),
        }
    }
    Ok(())
}

/// The component must export exactly the hooks of its declared world, at a compatible version.
pub(crate) fn check_exports(component: &Component, engine: &Engine, hooks: &[Hook]) -> Result<(), LoadError> {
    let ty = component.component_type();
    let mut found = Vec::new();
    for (name, _) in ty.exports(engine) {
        let hook = parse_name(name).filter(|(_, v)| compatible(*v)).and_then(|(iface, _)| match iface {
            "before-publish" => Some(Hook::BeforePublish),
            "on-command" => Some(Hook::OnCommand),
            "before-push" => Some(Hook::BeforePush),
            "scan-file" => Some(Hook::ScanFile),
            "after-publish" => Some(Hook::AfterPublish),
            "on-account" => Some(Hook::OnAccount),
            "on-login" => Some(Hook::OnLogin),
            "before-subscribe" => Some(Hook::BeforeSubscribe),
            _ => None,
        });
        match hook {
            Some(h) if hooks.contains(&h) => found.push(h),
            Some(h) => {
                return Err(LoadError::WorldMismatch(format!("exports hook {h}, which the manifest's world lacks")));
            }
            None => return Err(LoadError::WorldMismatch(format!("exports `{name}`, which is no hook of {PACKAGE}"))),
        }
    }
    if let Some(missing) = hooks.iter().find(|h| !found.contains(h)) {
        let want = format!("{PACKAGE}/{missing}@{}", version_text());
        return Err(LoadError::WorldMismatch(format!("does not export `{want}`")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_interface_and_version() {
        assert_eq!(parse_name("palaver:plugin/kv@0.1.0"), Some(("kv", Some((0, 1, 0)))));
        assert_eq!(parse_name("palaver:plugin/kv"), Some(("kv", None)));
        assert_eq!(parse_name("wasi:cli/environment@0.2.0"), None);
        assert_eq!(parse_name("palaver:pluginx/kv@0.1.0"), None);
    }

    #[test]
    fn only_the_host_minor_and_older_patches_are_compatible() {
        assert!(compatible(Some((0, 1, 0))), "components built before before-push keep loading");
        assert!(compatible(Some((0, 1, 1))), "components built before scan-file keep loading");
        assert!(compatible(Some((0, 1, 2))), "components built before the listeners and gates keep loading");
        assert!(compatible(Some((0, 1, 3))));
        assert!(!compatible(Some((0, 1, 4))), "a newer patch may import what the host lacks");
        assert!(!compatible(Some((0, 2, 0))));
        assert!(!compatible(Some((1, 1, 0))));
        assert!(!compatible(None));
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
