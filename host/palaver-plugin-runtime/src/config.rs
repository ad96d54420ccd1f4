//! The runtime's configuration: engine and pool sizing, the epoch tick, the disk cache, per-call limits (with
//! their per-KiB allowances), the circuit breakers and the key-value quota. The server fills it from its own typed
//! config; the defaults suit one node with a few plugins.

use crate::manifest::LimitsOverride;
use std::path::PathBuf;
use std::time::Duration;

/// Per-call limits. A call that exceeds any of them is stopped, its instance discarded and the fault counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (roughly, wasm instructions) per call: the deterministic CPU budget.
    pub fuel: u64,
    /// Wall-clock budget per call, enforced by epoch interruption: the backstop when a host call blocks or fuel
    /// accounting is too coarse.
    pub deadline: Duration,
    /// The most linear memory one instance may have, in bytes.
    pub memory_bytes: u64,
    /// The most bytes a call may return (content, head, reasons and flags added up).
    pub max_output_bytes: usize,
    /// The most host calls (kv, directory, events, log, …) one call may make.
    pub max_host_calls: u32,
    /// Extra fuel per KiB of input (a message's content and head, a command's arguments). A fixed budget would
    /// let a sender pick a message just large enough to exhaust it and so switch the filter off; with an
    /// allowance per KiB a message up to the input cap gets a full scan.
    pub fuel_per_kib: u64,
    /// Extra wall-clock time per KiB of input, for the same reason.
    pub deadline_per_kib: Duration,
}

impl Limits {
    /// The defaults for `before-publish`, which sits on every message's path: small and fast.
    pub const PUBLISH: Limits = Limits {
        fuel: 5_000_000,
        deadline: Duration::from_millis(20),
        memory_bytes: 16 << 20,
        max_output_bytes: 64 << 10,
        max_host_calls: 256,
        fuel_per_kib: 2_000_000,
        deadline_per_kib: Duration::from_micros(500),
    };

    /// The defaults for `on-command`, which may read the directory and write several keys.
    pub const COMMAND: Limits = Limits {
        fuel: 20_000_000,
        deadline: Duration::from_millis(100),
        memory_bytes: 16 << 20,
        max_output_bytes: 64 << 10,
        max_host_calls: 1024,
        fuel_per_kib: 2_000_000,
        deadline_per_kib: Duration::from_micros(500),
    };

    /// The defaults for `before-push`, called per recipient by the push worker (off the publish path, but once
    /// per pushed user): as small as `before-publish`'s.
    pub const PUSH: Limits = Limits::PUBLISH;

    /// The defaults for `scan-file`, called once per pending upload by the file-security worker (off any request
    /// path): a command's budget, and the per-KiB allowances cover the head the host passes (64 KiB by default).
    pub const SCAN: Limits = Limits::COMMAND;

    /// The defaults for the gates (`on-login`, `before-subscribe`), which sit on a login's or a join's path: as
    /// small as `before-publish`'s.
    pub const GATE: Limits = Limits::PUBLISH;

    /// The defaults for the listeners (`after-publish`, `on-account`), called by the event worker off any request
    /// path: a command's budget.
    pub const LISTENER: Limits = Limits::COMMAND;

    /// These limits with a manifest's overrides applied.
    pub fn with_overrides(self, o: &LimitsOverride) -> Limits {
        Limits {
            fuel: o.fuel.unwrap_or(self.fuel),
            deadline: o.deadline_ms.map(Duration::from_millis).unwrap_or(self.deadline),
            memory_bytes: o.memory_mib.map(|m| m << 20).unwrap_or(self.memory_bytes),
            max_output_bytes: o.max_output_bytes.unwrap_or(self.max_output_bytes),
            max_host_calls: o.max_host_calls.unwrap_or(self.max_host_calls),
            fuel_per_kib: o.fuel_per_kib.unwrap_or(self.fuel_per_kib),
            deadline_per_kib: o.deadline_us_per_kib.map(Duration::from_micros).unwrap_or(self.deadline_per_kib),
        }
    }

    /// The limits of one call with `input` bytes of input: fuel and deadline grow by their per-KiB allowance and
    /// the output cap by the input's size (a rewrite may return what it was given), counting at most `max_input`
    /// bytes, so that no input can buy an unbounded budget.
    pub fn for_input(self, input: usize, max_input: usize) -> Limits {
        let counted = input.min(max_input);
        let kib = u64::try_from(counted.div_ceil(1024)).unwrap_or(u64::MAX);
        let kib32 = u32::try_from(kib).unwrap_or(u32::MAX);
        Limits {
            fuel: self.fuel.saturating_add(self.fuel_per_kib.saturating_mul(kib)),
            deadline: self.deadline.saturating_add(self.deadline_per_kib.saturating_mul(kib32)),
            max_output_bytes: self.max_output_bytes.saturating_add(counted),
            ..self
        }
    }
}

/// When a plugin that keeps failing is switched off, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive faults that open the breaker.
    pub failure_threshold: u32,
    /// How long an open breaker skips the plugin before one trial call is let through.
    pub cool_down: Duration,
    /// Breakers are per tenant, so that one tenant's faults never switch a plugin off for the others; this bounds
    /// how many tenants' breakers one plugin keeps (tenants with no recent fault take no entry).
    pub max_tenants: usize,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig { failure_threshold: 5, cool_down: Duration::from_secs(10), max_tenants: 10_000 }
    }
}

pub use palaver_core::ports::KvQuota;

/// Sizing of wasmtime's pooling allocator. Slots are reserved up front (virtual memory only), which makes
/// instantiation a few microseconds instead of an mmap per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolingConfig {
    /// Component instances alive at once: warm instances plus calls in flight.
    pub max_instances: u32,
    /// The largest linear memory a slot can hold; manifests cannot raise a plugin's memory cap above it.
    pub max_memory_bytes: u64,
}

impl Default for PoolingConfig {
    fn default() -> Self {
        PoolingConfig { max_instances: 256, max_memory_bytes: 64 << 20 }
    }
}

/// Everything the runtime needs to start.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The node id, passed to plugins in every call context.
    pub node: String,
    /// Where compiled components are cached, keyed by content hash and engine version. `None`: no disk cache.
    pub cache_dir: Option<PathBuf>,
    /// How often the epoch advances; deadlines are rounded up to whole ticks.
    pub epoch_tick: Duration,
    /// The pooling allocator, or `None` for on-demand allocation (slower, but reserves nothing).
    pub pooling: Option<PoolingConfig>,
    /// Default limits of `before-publish` calls.
    pub publish_limits: Limits,
    /// Default limits of `on-command` calls.
    pub command_limits: Limits,
    /// Limits of `before-push` calls.
    pub push_limits: Limits,
    /// Limits of `scan-file` calls.
    pub scan_limits: Limits,
    /// Limits of `on-login` and `before-subscribe` calls.
    pub gate_limits: Limits,
    /// Limits of `after-publish` and `on-account` calls.
    pub listener_limits: Limits,
    /// The circuit breaker of every plugin.
    pub breaker: BreakerConfig,
    /// The longest log line a plugin may write; longer ones are cut.
    pub max_log_bytes: usize,
    /// The most buffered side effects (kv writes, events, notifications) one call may make.
    pub max_effects: usize,
    /// The most input bytes the per-KiB allowances of [`Limits`] count: the server sets its frame limit, the
    /// largest message a client can send.
    pub max_input_bytes: usize,
    /// The key-value quota of each plugin in each tenant.
    pub kv_quota: KvQuota,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            node: "local".to_owned(),
            cache_dir: None,
            epoch_tick: Duration::from_millis(1),
            pooling: Some(PoolingConfig::default()),
            publish_limits: Limits::PUBLISH,
            command_limits: Limits::COMMAND,
            push_limits: Limits::PUSH,
            scan_limits: Limits::SCAN,
            gate_limits: Limits::GATE,
            listener_limits: Limits::LISTENER,
            breaker: BreakerConfig::default(),
            max_log_bytes: 1024,
            max_effects: 64,
            max_input_bytes: 256 << 10,
            kv_quota: KvQuota::default(),
        }
    }
}

impl RuntimeConfig {
    /// This configuration with a disk cache in `dir`.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// This configuration for node `node`.
    pub fn with_node(mut self, node: impl Into<String>) -> Self {
        self.node = node.into();
        self
    }

    /// This configuration with another circuit breaker.
    pub fn with_breaker(mut self, breaker: BreakerConfig) -> Self {
        self.breaker = breaker;
        self
    }

    /// The number of epoch ticks that covers `deadline`, plus one because the current tick may be nearly over.
    pub(crate) fn deadline_ticks(&self, deadline: Duration) -> u64 {
        let tick = self.epoch_tick.as_micros().max(1);
        let ticks = deadline.as_micros().div_ceil(tick);
        u64::try_from(ticks).unwrap_or(u64::MAX).saturating_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let o = LimitsOverride { fuel: Some(7), memory_mib: Some(2), ..LimitsOverride::default() };
        let l = Limits::PUBLISH.with_overrides(&o);
        assert_eq!(l.fuel, 7);
        assert_eq!(l.memory_bytes, 2 << 20);
        assert_eq!(l.deadline, Limits::PUBLISH.deadline);
        assert_eq!(l.max_host_calls, Limits::PUBLISH.max_host_calls);
    }

    #[test]
    fn budgets_grow_with_the_input_up_to_the_cap() {
        let l = Limits::PUBLISH;
        assert_eq!(l.for_input(0, 1 << 20), l);
        let one = l.for_input(1, 1 << 20);
        assert_eq!(one.fuel, l.fuel + l.fuel_per_kib);
        assert_eq!(one.deadline, l.deadline + l.deadline_per_kib);
        assert_eq!(one.max_output_bytes, l.max_output_bytes + 1);
        let big = l.for_input(10 << 10, 4 << 10);
        assert_eq!(big.fuel, l.fuel + 4 * l.fuel_per_kib, "counted up to the cap only");
        assert_eq!(big.max_output_bytes, l.max_output_bytes + (4 << 10));
        assert_eq!(big.memory_bytes, l.memory_bytes);
    }

    #[test]
    fn deadlines_round_up_to_ticks() {
        let c = RuntimeConfig::default();
        assert_eq!(c.deadline_ticks(Duration::from_millis(20)), 21);
        assert_eq!(c.deadline_ticks(Duration::from_micros(1500)), 3);
    }
}
