//! Shared set-up of the integration tests: the real components built by `cargo xtask plugins` (built on first use,
//! under a lock), a registry per test with recording services, and short helpers for calls.

use palaver_core::ports::{PublishContext, PublishVerdict};
use palaver_core::{TenantId, TopicKind, UserId};
use palaver_plugin_runtime::{
    BreakerConfig, HostServices, KvError, KvOp, KvQuota, KvScope, KvUsage, Manifest, MemoryKv, PluginHooks, PluginInfo,
    PluginKv, PluginRegistry, PoolingConfig, RecordingEffects, RuntimeConfig, SystemClock,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The directory with the built components, building them if any source changed.
pub(crate) fn built() -> PathBuf {
    match xtask::ensure_plugins_built() {
        Ok(dir) => dir,
        Err(e) => panic!("building the test plugins failed (try `cargo xtask plugins`): {e}"),
    }
}

/// A component's bytes and its manifest, as built.
pub(crate) fn artifact(stem: &str) -> (Manifest, Vec<u8>) {
    let dir = built();
    let manifest = Manifest::from_file(&dir.join(format!("{stem}.toml"))).expect("manifest");
    let wasm = std::fs::read(dir.join(format!("{stem}.wasm"))).expect("component");
    (manifest, wasm)
}

/// A test's registry with its in-memory services and a directory of its own.
pub(crate) struct Env {
    pub(crate) registry: Arc<PluginRegistry>,
    pub(crate) hooks: PluginHooks,
    pub(crate) kv: Arc<MemoryKv>,
    pub(crate) effects: Arc<RecordingEffects>,
    pub(crate) dir: tempfile::TempDir,
}

/// The configuration tests run with: a small pool, a shared compile cache (so each component compiles once per
/// run, not once per test), and a breaker that only the breaker test trips.
pub(crate) fn config() -> RuntimeConfig {
    let cache = xtask::repo_root().join("target/plugin-test-cache");
    RuntimeConfig {
        pooling: Some(PoolingConfig { max_instances: 32, ..PoolingConfig::default() }),
        breaker: BreakerConfig {
            failure_threshold: 1000,
            cool_down: Duration::from_secs(60),
            ..BreakerConfig::default()
        },
        ..RuntimeConfig::default().with_node("test-node").with_cache_dir(cache)
    }
}

pub(crate) fn env() -> Env {
    env_with(config(), |s| s)
}

/// An environment with another configuration, and services adjusted by `services`.
pub(crate) fn env_with(cfg: RuntimeConfig, services: impl FnOnce(HostServices) -> HostServices) -> Env {
    built();
    let kv = Arc::new(MemoryKv::new(Arc::new(SystemClock)));
    let effects = Arc::new(RecordingEffects::new());
    let base = HostServices::in_memory().with_kv(kv.clone()).with_effects(effects.clone());
    let registry = Arc::new(PluginRegistry::new(cfg, services(base)).expect("registry"));
    let hooks = PluginHooks::new(registry.clone());
    Env { registry, hooks, kv, effects, dir: tempfile::tempdir().expect("tempdir") }
}

impl Env {
    /// Copies a built plugin (`<name>-<version>`) into this test's directory and returns its manifest path.
    pub(crate) fn copy(&self, stem: &str) -> PathBuf {
        copy_into(self.dir.path(), stem)
    }

    /// Loads a built plugin from this test's directory.
    pub(crate) fn load(&self, stem: &str) {
        let path = self.copy(stem);
        if let Err(e) = self.registry.load_file(&path) {
            panic!("loading {stem} failed: {e}");
        }
    }

    /// Loads a built plugin with its manifest changed by `edit`.
    pub(crate) fn load_edited(
        &self,
        stem: &str,
        edit: impl FnOnce(&mut Manifest),
    ) -> Result<palaver_plugin_runtime::LoadOutcome, palaver_plugin_runtime::RegistryError> {
        let (mut m, wasm) = artifact(stem);
        edit(&mut m);
        self.registry.load_bytes(m, &wasm)
    }

    pub(crate) fn info(&self, name: &str) -> PluginInfo {
        self.registry.info(name).unwrap_or_else(|| panic!("no plugin {name}"))
    }

    /// The plugin's live keys for tenant 1.
    pub(crate) fn keys(&self, plugin: &str) -> Vec<(String, Vec<u8>)> {
        self.kv.snapshot(KvScope { tenant: TenantId(1), plugin })
    }

    pub(crate) async fn publish(&self, text: &str) -> PublishVerdict {
        self.publish_as(1, Value::String(text.to_owned())).await
    }

    pub(crate) async fn publish_as(&self, tenant: u64, content: Value) -> PublishVerdict {
        self.hooks.judge(&ctx(tenant), &content, None).await
    }
}

/// Copies `<stem>.wasm` and `<stem>.toml` from the build into `dir`.
pub(crate) fn copy_into(dir: &Path, stem: &str) -> PathBuf {
    let src = built();
    for ext in ["wasm", "toml"] {
        let name = format!("{stem}.{ext}");
        std::fs::copy(src.join(&name), dir.join(&name)).unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
    dir.join(format!("{stem}.toml"))
}

/// The actor of every test call.
pub(crate) const ACTOR: UserId = UserId(0x0102_0304_0506_0708);

/// A group message's context in `tenant`.
pub(crate) fn ctx(tenant: u64) -> PublishContext {
    PublishContext {
        tenant: TenantId(tenant),
        topic: "grpTestTopic".to_owned(),
        kind: TopicKind::Group,
        from: ACTOR,
        session: "s1".to_owned(),
        node: "test-node".to_owned(),
    }
}

/// The reason of a rejection, or a panic naming what came instead.
pub(crate) fn rejected(v: &PublishVerdict) -> (u16, &str) {
    match v {
        PublishVerdict::Reject { code, reason } => (*code, reason),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Waits up to five seconds for `f` to hold.
pub(crate) fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A component as built against an earlier (or later) patch of `palaver:plugin`: the built component with every
/// `@0.1.3` of its import and export names turned into `@<version>` (same length, so the binary stays well-formed),
/// which is how a build against that version names them.
pub(crate) fn as_built_against(wasm: &[u8], version: &str) -> Vec<u8> {
    let (new, old) = (b"@0.1.3".as_slice(), format!("@{version}").into_bytes());
    assert_eq!(old.len(), new.len(), "a same-length version");
    let mut out = wasm.to_vec();
    let mut replaced = 0;
    let mut i = 0;
    while i + new.len() <= out.len() {
        if &out[i..i + new.len()] == new {
            out[i..i + new.len()].copy_from_slice(&old);
            replaced += 1;
            i += new.len();
        } else {
            i += 1;
        }
    }
    assert!(replaced > 0, "the component names palaver:plugin@0.1.3");
    out
}

/// A key-value store whose first `losses` commits lose a race (a conflict), then the memory store.
pub(crate) struct LosesFirst {
    losses: std::sync::atomic::AtomicU32,
    inner: MemoryKv,
}

impl LosesFirst {
    pub(crate) fn new(losses: u32) -> LosesFirst {
        LosesFirst { losses: std::sync::atomic::AtomicU32::new(losses), inner: MemoryKv::new(Arc::new(SystemClock)) }
    }
}

#[async_trait::async_trait]
impl PluginKv for LosesFirst {
    async fn get(&self, scope: KvScope<'_>, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.inner.get(scope, key).await
    }

    async fn usage(&self, scope: KvScope<'_>) -> Result<KvUsage, KvError> {
        self.inner.usage(scope).await
    }

    async fn commit(&self, scope: KvScope<'_>, ops: &[KvOp], quota: &KvQuota) -> Result<(), KvError> {
        let order = std::sync::atomic::Ordering::SeqCst;
        let lost = self.losses.fetch_update(order, order, |n| n.checked_sub(1)).is_ok();
        if lost { Err(KvError::Conflict("greetings".to_owned())) } else { self.inner.commit(scope, ops, quota).await }
    }
}
