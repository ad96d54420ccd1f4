//! The push side's shared state on a node: the buffer's sender, where the buffer drains to, the worker's device
//! copies and the counters, registered as a [`MetricsSource`] in the node's one registry.

use super::devices::DeviceCopies;
use crate::backbone::lane::Lane;
use palaver_core::MetricsSource;
use palaver_core::ports::PushTask;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

/// Upper bounds of the provider latency histogram, in seconds: a provider answers in tens of milliseconds to
/// seconds, coarser than the node's own latencies.
const BUCKETS: [f64; 8] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

fn provider_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: &'static str,
}

/// The push filters' decisions, each exported from zero.
const DECISIONS: [&str; 5] = ["keep", "drop", "delay", "rewrite", "delay_overflow"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabel {
    provider: String,
    reason: String,
}

/// Counters of the push path.
pub struct PushState {
    /// The buffer between the publish path and the outbox: its offers are `palaver_push_triggered`, its losses
    /// `palaver_push_dropped`.
    pub(crate) lane: Lane<PushTask>,
    /// The worker's copies of each user's devices; used only on a node without a shared bus.
    pub(crate) devices: DeviceCopies,
    pub(crate) deduplicated: Counter,
    pub(crate) dead_lettered: Counter,
    pub(crate) removed_devices: Counter,
    /// Tasks the worker skipped because their tenant turned push off (made while its settings were loading).
    pub(crate) tenant_off: Counter,
    succeeded: Family<ProviderLabel, Counter>,
    failed: Family<FailureLabel, Counter>,
    latency: Family<ProviderLabel, Histogram, fn() -> Histogram>,
    filtered: Family<DecisionLabel, Counter>,
}

impl PushState {
    pub(crate) fn new(lane: Lane<PushTask>, device_cache: usize) -> PushState {
        let filtered = Family::default();
        for decision in DECISIONS {
            let _ = filtered.get_or_create(&DecisionLabel { decision });
        }
        PushState {
            filtered,
            lane,
            devices: DeviceCopies::new(device_cache),
            deduplicated: Counter::default(),
            dead_lettered: Counter::default(),
            removed_devices: Counter::default(),
            tenant_off: Counter::default(),
            succeeded: Family::default(),
            failed: Family::default(),
            latency: Family::new_with_constructor(provider_histogram),
        }
    }

    /// Offers a task to the buffer; a full buffer drops it (counted).
    pub(crate) fn offer(&self, task: PushTask) {
        self.lane.offer(task);
    }

    pub(crate) fn sent(&self, provider: &str, took: Duration) {
        self.succeeded.get_or_create(&ProviderLabel { provider: provider.to_owned() }).inc();
        self.observe(provider, took);
    }

    pub(crate) fn failed(&self, provider: &str, reason: &str, took: Option<Duration>) {
        let label = FailureLabel { provider: provider.to_owned(), reason: reason.to_owned() };
        self.failed.get_or_create(&label).inc();
        if let Some(t) = took {
            self.observe(provider, t);
        }
    }

    fn observe(&self, provider: &str, took: Duration) {
        self.latency.get_or_create(&ProviderLabel { provider: provider.to_owned() }).observe(took.as_secs_f64());
    }

    /// Counts a push filter's decision (one of [`DECISIONS`]).
    pub(crate) fn filtered(&self, decision: &'static str) {
        self.filtered.get_or_create(&DecisionLabel { decision }).inc();
    }

    /// Push filter decisions of one kind, for tests.
    pub fn filtered_count(&self, decision: &'static str) -> u64 {
        self.filtered.get_or_create(&DecisionLabel { decision }).get()
    }

    /// Successful sends by provider, for tests.
    pub fn succeeded(&self, provider: &str) -> u64 {
        self.succeeded.get_or_create(&ProviderLabel { provider: provider.to_owned() }).get()
    }
}

impl MetricsSource for PushState {
    fn register(&self, r: &mut palaver_core::Registry) {
        let counters: [(&str, &str, &Counter); 6] = [
            (
                "palaver_push_triggered",
                "Push tasks made for messages, read receipts and subscription changes",
                &self.lane.offered,
            ),
            (
                "palaver_push_dropped",
                "Push tasks dropped: the buffer was full or the outbox refused them",
                &self.lane.dropped,
            ),
            (
                "palaver_push_deduplicated",
                "Pushes skipped because push:dedup already held the (topic, seq, user)",
                &self.deduplicated,
            ),
            (
                "palaver_push_dead_lettered",
                "Pushes that failed for good, recorded on the dead-letter topic",
                &self.dead_lettered,
            ),
            (
                "palaver_push_devices_removed",
                "Devices removed because their provider reported the token invalid",
                &self.removed_devices,
            ),
            (
                "palaver_push_tenant_off",
                "Push tasks skipped because their tenant's settings turn push off",
                &self.tenant_off,
            ),
        ];
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
        r.register("palaver_push_succeeded", "Pushes a provider accepted, by provider", self.succeeded.clone());
        r.register("palaver_push_failed", "Failed push attempts, by provider and reason", self.failed.clone());
        r.register("palaver_push_filtered", "Push filter (before-push) decisions, by decision", self.filtered.clone());
        r.register(
            "palaver_push_provider_seconds",
            "How long a provider took to answer one push",
            self.latency.clone(),
        );
    }
}
