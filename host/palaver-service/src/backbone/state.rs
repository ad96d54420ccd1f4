//! What the outbox writers, the relay and the audit consumer share on a node: each tenant's outbox depth as last
//! seen (the bound `outbox_max_depth` is checked against it), a wake-up for the relay, and their counters, rendered
//! as a [`MetricsSource`] in the node's `/metrics`.

use palaver_core::{MetricsSource, TenantId};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often the "outbox full" warning is logged per tenant at most.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The node's outbox bookkeeping.
#[derive(Debug)]
pub struct Backbone {
    /// Entries a tenant's outbox may hold; beyond it new records are refused (0: unbounded).
    pub max_depth: u64,
    depths: Mutex<BTreeMap<TenantId, u64>>,
    warned: Mutex<HashMap<TenantId, Instant>>,
    /// Woken when this node writes to an outbox, so the relay need not wait for its next poll.
    pub(crate) written: Notify,
    pub(crate) produced: AtomicU64,
    pub(crate) produce_failures: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) write_failures: AtomicU64,
    pub(crate) audit_stored: AtomicU64,
    pub(crate) audit_repeats: AtomicU64,
    pub(crate) audit_invalid: AtomicU64,
}

impl Backbone {
    pub fn new(max_depth: u64) -> Backbone {
        Backbone {
            max_depth,
            depths: Mutex::default(),
            warned: Mutex::default(),
            written: Notify::new(),
            produced: AtomicU64::new(0),
            produce_failures: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            write_failures: AtomicU64::new(0),
            audit_stored: AtomicU64::new(0),
            audit_repeats: AtomicU64::new(0),
            audit_invalid: AtomicU64::new(0),
        }
    }

    /// The tenant's depth as last counted (plus what this node wrote since).
    pub fn depth(&self, tenant: TenantId) -> u64 {
        self.depths.lock().get(&tenant).copied().unwrap_or(0)
    }

    /// Records the relay's count of the tenant's outbox.
    pub(crate) fn set_depth(&self, tenant: TenantId, depth: u64) {
        self.depths.lock().insert(tenant, depth);
        if self.max_depth > 0 && depth >= self.max_depth {
            self.warn_full(tenant, depth);
        }
    }

    /// Reserves room for `n` records; false (counted, warned) when the tenant's outbox is at its bound.
    pub(crate) fn admit(&self, tenant: TenantId, n: usize) -> bool {
        let mut depths = self.depths.lock();
        let depth = depths.entry(tenant).or_default();
        if self.max_depth > 0 && *depth >= self.max_depth {
            let at = *depth;
            drop(depths);
            self.refused.fetch_add(n as u64, Ordering::Relaxed);
            self.warn_full(tenant, at);
            return false;
        }
        *depth += n as u64;
        true
    }

    fn warn_full(&self, tenant: TenantId, depth: u64) {
        let now = Instant::now();
        let mut warned = self.warned.lock();
        if warned.get(&tenant).is_none_or(|t| now.duration_since(*t) >= WARN_EVERY) {
            warned.insert(tenant, now);
            tracing::warn!(%tenant, depth, max = self.max_depth,
                "the outbox is full (is the queue down?): new audit and summary records are refused until it drains");
        }
    }
}

impl MetricsSource for Backbone {
    fn render(&self, out: &mut String) {
        let name = "palaver_outbox_depth";
        let _ = writeln!(out, "# HELP {name} Entries waiting in a tenant's outbox, as last counted by the relay.");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (tenant, depth) in self.depths.lock().iter() {
            let _ = writeln!(out, "{name}{{tenant=\"{}\"}} {depth}", tenant.0);
        }
        let counters: [(&str, &str, &AtomicU64); 7] = [
            ("palaver_outbox_produced_total", "Outbox entries the relay produced to the queue.", &self.produced),
            (
                "palaver_outbox_produce_failures_total",
                "Relay batches the queue refused (retried with backoff).",
                &self.produce_failures,
            ),
            (
                "palaver_outbox_refused_total",
                "Records not written because the tenant's outbox was at outbox.max_depth.",
                &self.refused,
            ),
            ("palaver_outbox_write_failures_total", "Records the outbox store failed to write.", &self.write_failures),
            ("palaver_audit_stored_total", "Audit events the consumer wrote to audit_log.", &self.audit_stored),
            (
                "palaver_audit_repeats_total",
                "Audit events delivered again whose row existed already (not stored twice).",
                &self.audit_repeats,
            ),
            ("palaver_audit_invalid_total", "Audit records that did not decode (skipped).", &self.audit_invalid),
        ];
        for (name, help, value) in counters {
            let _ =
                writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", value.load(Ordering::Relaxed));
        }
    }
}
