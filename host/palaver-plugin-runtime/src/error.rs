//! Errors of the plugin runtime. Loading errors refuse a component before it runs; faults are what a running
//! call can suffer, counted and answered by the hook's failure policy; registry errors answer admin operations.

use serde::Serialize;

/// The engine or its epoch ticker could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// wasmtime refused the configuration (for example the pooling allocator could not reserve memory).
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// The thread that advances the epoch could not be started.
    #[error("cannot start the epoch ticker: {0}")]
    Ticker(String),
}

/// Why a component was refused at load. The previous version, if any, keeps running.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LoadError {
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    /// The manifest does not parse or breaks a rule.
    #[error("invalid manifest: {0}")]
    Manifest(String),
    /// The manifest names a content hash the component does not have (a half-copied or swapped file).
    #[error("content hash mismatch: the manifest says {expected}, the component is {actual}")]
    HashMismatch { expected: String, actual: String },
    /// The bytes are not a WebAssembly component.
    #[error("not a component: {0}")]
    NotAComponent(String),
    /// wasmtime could not compile the component.
    #[error("compile failed: {0}")]
    Compile(String),
    /// The component imports an interface its manifest does not grant.
    #[error("import not granted: {0}")]
    NotGranted(String),
    /// The component imports something the host does not provide (WASI, another package, a newer version).
    #[error("unsupported import: {0}")]
    UnsupportedImport(String),
    /// The component's exports do not match the world its manifest declares.
    #[error("world mismatch: {0}")]
    WorldMismatch(String),
    /// Pre-instantiation failed: an import or export has the wrong type.
    #[error("link failed: {0}")]
    Link(String),
    /// A golden fixture shipped with the plugin gave another verdict than it expects.
    #[error("golden fixture {name:?} failed: {message}")]
    Fixture { name: String, message: String },
    /// A tenant's stored settings do not validate against the new version's schema.
    #[error("settings of tenant {tenant} do not fit the new schema: {message}")]
    TenantSettings { tenant: u64, message: String },
}

impl LoadError {
    pub(crate) fn io(path: &std::path::Path, err: std::io::Error) -> LoadError {
        LoadError::Io { path: path.display().to_string(), message: err.to_string() }
    }
}

/// Why an admin operation on the registry failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// No plugin of that name is loaded.
    #[error("no plugin named {0:?}")]
    UnknownPlugin(String),
    /// Rollback was asked for but there is no previous version.
    #[error("plugin {0:?} has no previous version to roll back to")]
    NoPrevious(String),
    /// Reload was asked for a plugin that was not loaded from a file.
    #[error("plugin {0:?} was not loaded from a file")]
    NoSource(String),
    /// Tenant settings do not validate against the plugin's schema.
    #[error("invalid settings for plugin {plugin:?}: {message}")]
    Settings { plugin: String, message: String },
    /// A tenant's HTTP allow-list is not within the plugin's, or the plugin does not use outbound HTTP.
    #[error("invalid http_allow for plugin {plugin:?}: {message}")]
    HttpAllow { plugin: String, message: String },
    /// `before-push` always fails open; a tenant cannot make it fail closed.
    #[error("plugin {0:?}: before-push always fails open")]
    PushFailsOpen(String),
    /// `scan-file` always fails closed; a tenant cannot make it fail open.
    #[error("plugin {0:?}: scan-file always fails closed")]
    ScanFailsClosed(String),
    /// `after-publish` and `on-account` always fail closed (a fault is a failed delivery, retried); a tenant cannot
    /// make them fail open.
    #[error("plugin {0:?}: after-publish and on-account always fail closed")]
    ListenerFailsClosed(String),
    /// A cluster rollout decides this plugin's versions; files and local rollbacks do not.
    #[error("plugin {0:?} follows its cluster rollout: change the rollout (PUT /v1/admin/plugins/{0}/rollout)")]
    Managed(String),
    /// The directory watcher could not be started.
    #[error("cannot start the watcher: {0}")]
    Watch(String),
    /// Loading the new version failed; the old one keeps running.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Why a command could not be dispatched at all (as opposed to a plugin refusing it).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    /// No plugin enabled for the tenant handles this command.
    #[error("no plugin handles command {0:?}")]
    UnknownCommand(String),
}

/// What went wrong in one plugin call. Every fault discards the instance it happened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The guest trapped (a panic, `unreachable`, an out-of-bounds access).
    Trap,
    /// The call used up its fuel budget.
    Fuel,
    /// The call ran past its wall-clock deadline.
    Deadline,
    /// The guest tried to grow its memory past the cap.
    Memory,
    /// The output was larger than the output cap.
    OutputSize,
    /// The output was malformed (content that is not JSON, a ctrl code outside 400–599).
    InvalidOutput,
    /// The guest called the host more often than the cap allows.
    HostCalls,
    /// A fresh instance could not be created (pool exhausted, start function trapped).
    Instantiate,
    /// The call's buffered key-value writes conflicted with a concurrent call at commit.
    Conflict,
    /// The call's buffered key-value writes, with a concurrent call's, would pass the quota at commit.
    KvQuota,
}

impl FaultKind {
    /// Every kind, in the order metrics list them.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Trap,
        FaultKind::Fuel,
        FaultKind::Deadline,
        FaultKind::Memory,
        FaultKind::OutputSize,
        FaultKind::InvalidOutput,
        FaultKind::HostCalls,
        FaultKind::Instantiate,
        FaultKind::Conflict,
        FaultKind::KvQuota,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Trap => "trap",
            FaultKind::Fuel => "fuel",
            FaultKind::Deadline => "deadline",
            FaultKind::Memory => "memory",
            FaultKind::OutputSize => "output-size",
            FaultKind::InvalidOutput => "invalid-output",
            FaultKind::HostCalls => "host-calls",
            FaultKind::Instantiate => "instantiate",
            FaultKind::Conflict => "conflict",
            FaultKind::KvQuota => "kv-quota",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A failed plugin call: what kind of failure, and wasmtime's or the host's description of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

impl Fault {
    pub(crate) fn new(kind: FaultKind, message: impl Into<String>) -> Fault {
        Fault { kind, message: message.into() }
    }

    /// Classifies a wasmtime error. A limit the host enforced itself (memory, host calls) left a hint in the store,
    /// which wins over the generic trap wasmtime reports for it. `said` is the last line the call logged at error
    /// level: a guest built with `panic = "abort"` traps on `unreachable`, so the panic's message reaches the host
    /// only that way (the SDK's panic hook logs it), and it goes first, before the backtrace.
    pub(crate) fn from_wasmtime(err: &wasmtime::Error, hint: Option<FaultKind>, said: Option<&str>) -> Fault {
        let kind = hint.unwrap_or_else(|| match err.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::OutOfFuel) => FaultKind::Fuel,
            Some(wasmtime::Trap::Interrupt) => FaultKind::Deadline,
            _ => FaultKind::Trap,
        });
        // The root cause carries the trap code; the context chain adds the backtrace.
        let mut message = match said {
            Some(line) => format!("the plugin logged {line:?}; {err:#}"),
            None => format!("{err:#}"),
        };
        message.truncate(message.floor_char_boundary(1024));
        Fault { kind, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_quotes_what_the_plugin_logged_first() {
        let err = wasmtime::Error::new(wasmtime::Trap::UnreachableCodeReached);
        let plain = Fault::from_wasmtime(&err, None, None);
        assert_eq!(plain.kind, FaultKind::Trap);
        let said = Fault::from_wasmtime(&err, None, Some("panicked at src/lib.rs:1:1: boom"));
        assert_eq!(said.kind, FaultKind::Trap);
        assert!(said.message.starts_with("the plugin logged \"panicked at src/lib.rs:1:1: boom\"; "), "{said}");
        assert!(said.message.ends_with(&plain.message), "{said}");
        // A limit the host enforced names the fault, whatever was logged.
        let hinted = Fault::from_wasmtime(&err, Some(FaultKind::HostCalls), Some("x"));
        assert_eq!(hinted.kind, FaultKind::HostCalls);
        // The message stays bounded, cut on a character boundary, the logged line first.
        let long = Fault::from_wasmtime(&err, None, Some(&"é".repeat(2000)));
        assert!(
            long.message.len() <= 1024 && long.message.starts_with("the plugin logged \"é"),
            "{}",
            long.message.len()
        );
    }
}
