//! The push side's shared state on a node: the buffer's sender and the counters, rendered as a
//! [`MetricsSource`] in the node's `/metrics`.

use palaver_core::MetricsSource;
use palaver_core::ports::PushTask;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Upper bounds of the provider latency histogram, in seconds.
const BUCKETS: [f64; 8] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default)]
struct Latency {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// Counters of the push path.
pub struct PushState {
    tx: mpsc::Sender<PushTask>,
    pub(crate) triggered: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) deduplicated: AtomicU64,
    pub(crate) dead_lettered: AtomicU64,
    pub(crate) removed_devices: AtomicU64,
    succeeded: Mutex<BTreeMap<String, u64>>,
    failed: Mutex<BTreeMap<(String, String), u64>>,
    latency: Mutex<BTreeMap<String, Latency>>,
}

impl PushState {
    pub(crate) fn new(tx: mpsc::Sender<PushTask>) -> PushState {
        PushState {
            tx,
            triggered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            deduplicated: AtomicU64::new(0),
            dead_lettered: AtomicU64::new(0),
            removed_devices: AtomicU64::new(0),
            succeeded: Mutex::default(),
            failed: Mutex::default(),
            latency: Mutex::default(),
        }
    }

    /// Offers a task to the buffer; a full buffer drops it (counted).
    pub(crate) fn offer(&self, task: PushTask) {
        match self.tx.try_send(task) {
            Ok(()) => {
                self.triggered.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Tasks that reached the buffer but not the outbox.
    pub(crate) fn lost(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn sent(&self, provider: &str, took: Duration) {
        *self.succeeded.lock().entry(provider.to_owned()).or_default() += 1;
        self.observe(provider, took);
    }

    pub(crate) fn failed(&self, provider: &str, reason: &str, took: Option<Duration>) {
        *self.failed.lock().entry((provider.to_owned(), reason.to_owned())).or_default() += 1;
        if let Some(t) = took {
            self.observe(provider, t);
        }
    }

    fn observe(&self, provider: &str, took: Duration) {
        let secs = took.as_secs_f64();
        let mut l = self.latency.lock();
        let l = l.entry(provider.to_owned()).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                l.counts[i] += 1;
            }
        }
        l.sum += secs;
        l.count += 1;
    }

    /// Successful sends by provider, for tests.
    pub fn succeeded(&self, provider: &str) -> u64 {
        self.succeeded.lock().get(provider).copied().unwrap_or(0)
    }
}

impl MetricsSource for PushState {
    fn render(&self, out: &mut String) {
        let counters: [(&str, &str, &AtomicU64); 5] = [
            ("palaver_push_triggered_total", "Push tasks made for stored messages.", &self.triggered),
            (
                "palaver_push_dropped_total",
                "Push tasks dropped: the buffer was full or the outbox refused them.",
                &self.dropped,
            ),
            (
                "palaver_push_deduplicated_total",
                "Pushes skipped because push:dedup already held the (topic, seq, user).",
                &self.deduplicated,
            ),
            (
                "palaver_push_dead_lettered_total",
                "Pushes that failed for good, recorded on the dead-letter topic.",
                &self.dead_lettered,
            ),
            (
                "palaver_push_devices_removed_total",
                "Devices removed because their provider reported the token invalid.",
                &self.removed_devices,
            ),
        ];
        for (name, help, value) in counters {
            let _ =
                writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", value.load(Ordering::Relaxed));
        }
        let name = "palaver_push_succeeded_total";
        let _ = writeln!(out, "# HELP {name} Pushes a provider accepted, by provider.\n# TYPE {name} counter");
        for (p, n) in self.succeeded.lock().iter() {
            let _ = writeln!(out, "{name}{{provider=\"{p}\"}} {n}");
        }
        let name = "palaver_push_failed_total";
        let _ = writeln!(out, "# HELP {name} Failed push attempts, by provider and reason.\n# TYPE {name} counter");
        for ((p, r), n) in self.failed.lock().iter() {
            let _ = writeln!(out, "{name}{{provider=\"{p}\",reason=\"{r}\"}} {n}");
        }
        let name = "palaver_push_provider_seconds";
        let _ = writeln!(out, "# HELP {name} How long a provider took to answer one push.\n# TYPE {name} histogram");
        for (p, l) in self.latency.lock().iter() {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(out, "{name}_bucket{{provider=\"{p}\",le=\"{b}\"}} {}", l.counts[i]);
            }
            let _ = writeln!(out, "{name}_bucket{{provider=\"{p}\",le=\"+Inf\"}} {}", l.count);
            let _ = writeln!(out, "{name}_sum{{provider=\"{p}\"}} {}", l.sum);
            let _ = writeln!(out, "{name}_count{{provider=\"{p}\"}} {}", l.count);
        }
    }
}
