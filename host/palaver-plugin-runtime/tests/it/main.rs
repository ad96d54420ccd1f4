//! Integration tests of the plugin runtime against real components, built from `plugins/` and `examples/` by the
//! xtask on first use (or found current in `target/plugins/`).
//!
//! One test binary, so wasmtime links once; modules by theme:
//! - `calls`: verdicts, tenants, order, commands, directory, instances, metrics;
//! - `limits`: traps and every limit, side effects, failure policies, the breaker, commit conflicts;
//! - `loading`: the load gate's refusals, the disk cache, directories;
//! - `push`: `before-push` decisions, fail-open faults, 0.1.0 and 0.1.1 components on the 0.1.2 host;
//! - `reload`: hot reload under load, in-flight calls, bad uploads, rollback, the watcher;
//! - `rollout`: cluster rollouts applied to one registry: canaries, refusals, a managed plugin's directory;
//! - `scan`: `scan-file` verdicts (the file-policy plugin), order and the strictest verdict, fail-closed faults.

mod calls;
mod common;
mod hardening;
mod limits;
mod loading;
mod push;
mod reload;
mod rollout;
mod scan;
