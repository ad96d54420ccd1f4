//! Palaver's plugin runtime: business logic as sandboxed WebAssembly components behind the host's hook ports.
//!
//! A plugin is a component built against the `palaver:plugin@0.1.3` WIT package (`plugins/sdk/wit/`, inside the
//! SDK's crate) plus a TOML manifest beside it. The runtime:
//!
//! - keeps **one wasmtime `Engine`** per process with fuel, epoch interruption (a ticker thread advances the
//!   epoch), the pooling allocator and, when configured, wasmtime's disk cache of compiled code keyed by the
//!   component's content hash and the engine's version and settings;
//! - runs every load through a **gate** off the hot path: the bytes must be a component, its imports must be host
//!   interfaces its manifest grants (no WASI: the linker defines nothing else), its exports must be its world's
//!   hooks, stored tenant settings must fit the new schema, and its golden fixtures must pass; then one
//!   `InstancePre` per version is swapped in atomically, with the previous version kept for a one-call rollback;
//! - runs every call under an epoch **deadline**, a **fuel** budget, a **memory cap**, an **output cap** and a
//!   **host-call cap**; a trap or breached limit discards the instance, is counted, and the hook's **failure
//!   policy** answers (fail-closed unless the manifest, the operator or the tenant says open, per plugin, hook and
//!   tenant); the fuel and deadline budgets grow with the input's size, so no message within the frame limit can
//!   run a filter out of budget;
//! - buffers a call's **side effects** (key-value writes, events, notifications) and applies them only if the
//!   call succeeded;
//! - switches off a plugin that keeps failing for a tenant with that tenant's **circuit breaker** and retries it
//!   after a cool-down; other tenants are unaffected;
//! - caps each plugin's **key-value quota** (keys and bytes) per tenant.
//!
//! The server wires it like this:
//!
//! ```text
//! let services = HostServices::new(kv, Arc::new(PortsDirectory::new(users, topics, subs)), effects, clock);
//! let registry = Arc::new(PluginRegistry::new(RuntimeConfig::default().with_cache_dir(cache), services)?);
//! registry.load_dir(&plugins_dir);                       // at start (in spawn_blocking: it compiles)
//! let _watcher = registry.watch(&plugins_dir, Duration::from_secs(1))?;
//! ports.hooks = Arc::new(PluginHooks::new(registry.clone()));
//! ports.push_hook = Arc::new(PluginHooks::new(registry.clone()));   // before-push, for the push worker
//! ports.scan_hook = Arc::new(PluginHooks::new(registry.clone()));   // scan-file, for the file-security worker
//! ports.gates = Arc::new(PluginHooks::new(registry.clone()));       // on-login and before-subscribe
//! ports.listeners = Arc::new(PluginHooks::new(registry.clone()));   // after-publish and on-account, for the event worker
//! // SIGHUP: registry.rescan(); GET /v1/admin/plugins: registry.list(); /metrics: registry.render_metrics()
//! ```
//!
//! It depends on palaver-core only (plus wasmtime): the world beyond the sandbox is reached through
//! [`PluginKv`], [`Directory`] and [`Effects`], which the server implements over its own ports.
//!
//! # Module map
//!
//! | module | what |
//! | --- | --- |
//! | `config` | [`RuntimeConfig`], [`Limits`], [`BreakerConfig`], [`PoolingConfig`], [`KvQuota`] |
//! | `manifest`, `settings`, `fixtures` | the manifest beside each component, its settings schema, its golden fixtures |
//! | `runtime` | the engine, the epoch ticker, the compile step (with wasmtime's disk cache) |
//! | `bindings`, `imports` | `bindgen!` of `plugins/sdk/wit/`, the linker of granted imports, the host side of each import |
//! | `http` | the `http` import: the manifest's `[http]` section, allow-lists and tenants' narrowing, the two shared clients, caps |
//! | `version` | the load gate: header, hash, imports against grants, exports against the world, `InstancePre` |
//! | `instance`, `store` | one call: instance checkout (warm or fresh), fuel, deadline, caps, the effect buffer |
//! | `registry`, `dispatch`, `tenants` | loaded plugins, swaps, rollback; one call end to end; per-tenant choices |
//! | `hooks` | [`PluginHooks`]: the `PublishHook`, `PushHook` and `ScanHook` ports and commands, with failure policies |
//! | `gates`, `listeners` | [`PluginHooks`] as the `GateHook` port (`on-login`, `before-subscribe`) and the `EventHook` port (`after-publish`, `on-account`) |
//! | `breaker`, `metrics`, `admin` | the circuit breaker, `palaver_plugin_*` metrics, the admin listing |
//! | `watch` | the plugins-directory watcher |
//! | `kv`, `directory`, `effects`, `services` | the ports the imports reach, with in-memory implementations |
//!
//! # What a call guarantees
//!
//! - It runs on the version it pinned at its start, even if a swap happens meanwhile.
//! - It sees only its tenant's data and its own plugin's keys.
//! - It either succeeds, and its buffered writes, events and notifications are applied (key-value writes first; a
//!   compare-and-set that lost a race fails the call as a whole), or it faults, and nothing it did is applied.
//! - A fault never reaches the caller as an error: the hook's failure policy turns it into a verdict.

mod admin;
#[allow(unreachable_pub)]
mod bindings;
mod breaker;
mod config;
mod directory;
mod dispatch;
mod effects;
mod error;
mod fixtures;
mod gates;
mod hooks;
mod http;
mod imports;
mod instance;
mod kv;
mod listeners;
mod manifest;
mod metrics;
mod registry;
mod rollout;
mod runtime;
mod services;
mod settings;
mod store;
mod tenants;
mod version;
mod watch;

pub use admin::{HookCounts, PluginInfo, PluginState};
pub use config::{BreakerConfig, KvQuota, Limits, PoolingConfig, RuntimeConfig};
pub use directory::{Directory, DirectoryError, MemberInfo, NoDirectory, PortsDirectory, TopicInfo, UserInfo};
pub use effects::{EffectError, Effects, EventTarget, NullEffects, PluginEvent, PluginNotification, RecordingEffects};
pub use error::{CommandError, Fault, FaultKind, LoadError, RegistryError, RuntimeError};
pub use fixtures::{Expect, Fixture};
pub use hooks::{CommandContext, CommandOutcome, PluginHooks, UNAVAILABLE};
pub use http::HttpSection;
pub use kv::{KvError, KvOp, KvScope, KvUsage, MemoryKv, PluginKv};
pub use manifest::{
    ClientCommand, FailurePolicy, Grant, Hook, HookConfig, Hooks, InstanceMode, InstancePolicy, LimitsOverride,
    Manifest, World,
};
pub use registry::{LoadOutcome, LoadReport, PluginRegistry, Rollback};
pub use rollout::{ReleaseRef, RolloutApplied, RolloutTarget};
pub use services::{Clock, HostServices, ManualClock, SystemClock};
pub use settings::{SettingSpec, SettingType, SettingsSchema};
pub use tenants::TenantChoice;
pub use watch::DirWatcher;
