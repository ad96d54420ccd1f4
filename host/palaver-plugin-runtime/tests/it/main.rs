//! Integration tests of the plugin runtime against real components, built from `plugins/` and `examples/` by the
//! xtask on first use (or found current in `target/plugins/`).
//!
//! One test binary, so wasmtime links once; modules by theme:
//! - `calls`: verdicts, tenants, order, commands, directory, instances, metrics;
//! - `limits`: traps and every limit, side effects, failure policies, the breaker, commit conflicts;
//! - `http`: the `http` import against a local server: the allow-list and tenants' narrowing, no redirects, the
//!   caps, the time bound, forbidden headers, the grant;
//! - `loading`: the load gate's refusals, the disk cache, directories;
//! - `gates`: `on-login` and `before-subscribe` (access-rules, gate-fault): refusals, chained restrictions, bad
//!   restrictions and faults on the failure policy, canaries;
//! - `listeners`: `after-publish` and `on-account` (listen-echo): deliveries, `err`, faults and skips as failures
//!   named by plugin, `only`, attempts, canaries;
//! - `push`: `before-push` decisions, fail-open faults, 0.1.0 and 0.1.1 components on the 0.1.3 host;
//! - `reload`: hot reload under load, in-flight calls, bad uploads, rollback, the watcher;
//! - `rollout`: cluster rollouts applied to one registry: canaries, refusals, a managed plugin's directory;
//! - `scan`: `scan-file` verdicts (the file-policy plugin), order and the strictest verdict, fail-closed faults,
//!   a 0.1.2 component on the 0.1.3 host and a 0.1.4 one refused.

mod calls;
mod common;
mod gates;
mod hardening;
mod http;
mod limits;
mod listeners;
mod loading;
mod push;
mod reload;
mod rollout;
mod scan;
