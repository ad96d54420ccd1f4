//! What the outbox writers, the relay and the audit consumer share on a node: each tenant's outbox depth as last
//! seen (the bound `outbox_max_depth` is checked against it), a wake-up for the relay, and their counters,
//! registered as a [`MetricsSource`] in the node's registry.

use palaver_core::{MetricsSource, TenantId};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::{BTreeMap, HashMap};
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
    /// `depths` as exported, set whenever a depth changes.
    depth_gauges: Family<TenantLabel, Gauge>,
    pub(crate) produced: Counter,
    pub(crate) produce_failures: Counter,
    pub(crate) refused: Counter,
    pub(crate) write_failures: Counter,
    pub(crate) audit_stored: Counter,
    pub(crate) audit_repeats: Counter,
    pub(crate) audit_invalid: Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabel {
    tenant: u64,
}

impl Backbone {
    pub fn new(max_depth: u64) -> Backbone {
        Backbone {
            max_depth,
            depths: Mutex::default(),
            warned: Mutex::default(),
            written: Notify::new(),
            depth_gauges: Family::default(),
            produced: Counter::default(),
            produce_failures: Counter::default(),
            refused: Counter::default(),
            write_failures: Counter::default(),
            audit_stored: Counter::default(),
            audit_repeats: Counter::default(),
            audit_invalid: Counter::default(),
        }
    }

    /// The tenant's depth as last counted (plus what this node wrote since).
    pub fn depth(&self, tenant: TenantId) -> u64 {
        self.depths.lock().get(&tenant).copied().unwrap_or(0)
    }

    /// Records the relay's count of the tenant's outbox.
    pub(crate) fn set_depth(&self, tenant: TenantId, depth: u64) {
        self.depths.lock().insert(tenant, depth);
        self.export_depth(tenant, depth);
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
            self.refused.inc_by(n as u64);
            self.warn_full(tenant, at);
            return false;
        }
        *depth += n as u64;
        let now = *depth;
        drop(depths);
        self.export_depth(tenant, now);
        true
    }

    fn export_depth(&self, tenant: TenantId, depth: u64) {
        self.depth_gauges
            .get_or_create(&TenantLabel { tenant: tenant.0 })
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
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
    fn register(&self, r: &mut palaver_core::Registry) {
        r.register(
            "palaver_outbox_depth",
            "Entries waiting in a tenant's outbox, as last counted by the relay",
            self.depth_gauges.clone(),
        );
        let counters: [(&str, &str, &Counter); 7] = [
            ("palaver_outbox_produced", "Outbox entries the relay produced to the queue", &self.produced),
            (
                "palaver_outbox_produce_failures",
                "Relay batches the queue refused (retried with backoff)",
                &self.produce_failures,
            ),
            (
                "palaver_outbox_refused",
                "Records not written because the tenant's outbox was at outbox.max_depth",
                &self.refused,
            ),
            ("palaver_outbox_write_failures", "Records the outbox store failed to write", &self.write_failures),
            ("palaver_audit_stored", "Audit events the consumer wrote to audit_log", &self.audit_stored),
            (
                "palaver_audit_repeats",
                "Audit events delivered again whose row existed already (not stored twice)",
                &self.audit_repeats,
            ),
            ("palaver_audit_invalid", "Audit records that did not decode (skipped)", &self.audit_invalid),
        ];
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
    }
}
