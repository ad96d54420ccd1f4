//! The service's Prometheus metrics. Every metric name Palaver exports is written here and nowhere else.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The message kinds counted per request, in wire order.
const KINDS: [&str; 10] = ["hi", "acc", "login", "sub", "leave", "pub", "get", "set", "del", "note"];

/// Counters shared by every session of the node.
#[derive(Debug, Default)]
pub struct Metrics {
    sessions_opened: AtomicU64,
    requests: [AtomicU64; KINDS.len()],
    malformed: AtomicU64,
    errors: Mutex<BTreeMap<u16, u64>>,
    messages_stored: AtomicU64,
    message_retries: AtomicU64,
    fanout_frames: AtomicU64,
    fanout_dropped: AtomicU64,
    /// Envelopes published, by kind, and those the bus refused.
    bus_published: Mutex<BTreeMap<&'static str, u64>>,
    bus_publish_failed: AtomicU64,
    /// Envelopes received from other nodes, by outcome.
    bus_received: Mutex<BTreeMap<&'static str, u64>>,
    /// Sessions closed by a session control, by how the control arrived.
    sessions_controlled: Mutex<BTreeMap<&'static str, u64>>,
    /// Business commands (`/v1/im/`), by outcome, and the time they took in all.
    business_commands: Mutex<BTreeMap<&'static str, u64>>,
    business_micros: AtomicU64,
    /// Calls to the business rules (the plugins) and the time they took in all.
    rule_calls: AtomicU64,
    rule_micros: AtomicU64,
}

impl Metrics {
    pub(crate) fn session_opened(&self) {
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn request(&self, kind: &str) {
        if let Some(i) = KINDS.iter().position(|k| *k == kind) {
            self.requests[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn error(&self, code: u16) {
        *self.errors.lock().entry(code).or_default() += 1;
    }

    pub(crate) fn message_stored(&self) {
        self.messages_stored.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn message_retry(&self) {
        self.message_retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fanout(&self, delivered: bool) {
        if delivered {
            self.fanout_frames.fetch_add(1, Ordering::Relaxed);
        } else {
            self.fanout_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn bus_published(&self, kind: &'static str, ok: bool) {
        if ok {
            *self.bus_published.lock().entry(kind).or_default() += 1;
        } else {
            self.bus_publish_failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn bus_received(&self, outcome: &'static str) {
        *self.bus_received.lock().entry(outcome).or_default() += 1;
    }

    pub(crate) fn session_controlled(&self, via: &'static str) {
        *self.sessions_controlled.lock().entry(via).or_default() += 1;
    }

    pub(crate) fn business_command(&self, outcome: &'static str, took: std::time::Duration) {
        *self.business_commands.lock().entry(outcome).or_default() += 1;
        self.business_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    pub(crate) fn rule_call(&self, took: std::time::Duration) {
        self.rule_calls.fetch_add(1, Ordering::Relaxed);
        self.rule_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// Envelopes received from other nodes with `outcome` (`applied`, `loopback`, `duplicate`, `malformed`,
    /// `mismatch`).
    pub fn bus_received_count(&self, outcome: &str) -> u64 {
        self.bus_received.lock().get(outcome).copied().unwrap_or(0)
    }

    /// Frames dropped because a session's queue was full.
    pub fn dropped(&self) -> u64 {
        self.fanout_dropped.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition, with the live session count passed in.
    pub fn render(&self, sessions: usize) -> String {
        let mut out = String::with_capacity(2048);
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in samples {
                let _ = writeln!(out, "{name}{labels} {v}");
            }
        };
        metric("palaver_sessions", "gauge", "Live client sessions on this node.", &[(String::new(), sessions as u64)]);
        metric(
            "palaver_sessions_opened_total",
            "counter",
            "Client sessions opened.",
            &[(String::new(), load(&self.sessions_opened))],
        );
        let requests: Vec<(String, u64)> =
            KINDS.iter().zip(&self.requests).map(|(k, v)| (format!("{{kind=\"{k}\"}}"), load(v))).collect();
        metric("palaver_requests_total", "counter", "Client messages handled, by kind.", &requests);
        metric(
            "palaver_requests_malformed_total",
            "counter",
            "Client frames that did not decode.",
            &[(String::new(), load(&self.malformed))],
        );
        let errors: Vec<(String, u64)> =
            self.errors.lock().iter().map(|(c, v)| (format!("{{code=\"{c}\"}}"), *v)).collect();
        metric("palaver_request_errors_total", "counter", "Requests answered with an error, by ctrl code.", &errors);
        metric(
            "palaver_messages_stored_total",
            "counter",
            "Messages stored under a new seq.",
            &[(String::new(), load(&self.messages_stored))],
        );
        metric(
            "palaver_message_retries_total",
            "counter",
            "Publishes answered from an earlier attempt (same client_mid).",
            &[(String::new(), load(&self.message_retries))],
        );
        metric(
            "palaver_fanout_frames_total",
            "counter",
            "Frames queued to sessions by fanout.",
            &[(String::new(), load(&self.fanout_frames))],
        );
        metric(
            "palaver_fanout_dropped_total",
            "counter",
            "Frames dropped because a session queue was full.",
            &[(String::new(), load(&self.fanout_dropped))],
        );
        let labelled = |map: &Mutex<BTreeMap<&'static str, u64>>, label: &str| -> Vec<(String, u64)> {
            map.lock().iter().map(|(k, v)| (format!("{{{label}=\"{k}\"}}"), *v)).collect()
        };
        metric(
            "palaver_bus_published_total",
            "counter",
            "Realtime envelopes published to other nodes, by kind.",
            &labelled(&self.bus_published, "kind"),
        );
        metric(
            "palaver_bus_publish_failed_total",
            "counter",
            "Realtime envelopes the bus refused (queue full or closed).",
            &[(String::new(), load(&self.bus_publish_failed))],
        );
        metric(
            "palaver_bus_received_total",
            "counter",
            "Realtime envelopes received from the bus, by outcome.",
            &labelled(&self.bus_received, "outcome"),
        );
        metric(
            "palaver_sessions_controlled_total",
            "counter",
            "Sessions closed by a session control, by how it arrived (event, check).",
            &labelled(&self.sessions_controlled, "via"),
        );
        metric(
            "palaver_business_commands_total",
            "counter",
            "Business commands (/v1/im/) run, by outcome (ok, refused, failed).",
            &labelled(&self.business_commands, "outcome"),
        );
        metric(
            "palaver_business_command_microseconds_total",
            "counter",
            "Time spent running business commands, rules, storage and events included.",
            &[(String::new(), load(&self.business_micros))],
        );
        metric(
            "palaver_business_rule_calls_total",
            "counter",
            "Calls to the business rules (the plugins' on-command hook).",
            &[(String::new(), load(&self.rule_calls))],
        );
        metric(
            "palaver_business_rule_microseconds_total",
            "counter",
            "Time spent in the business rules, a part of the command time.",
            &[(String::new(), load(&self.rule_micros))],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_metric() {
        let m = Metrics::default();
        m.request("pub");
        m.error(404);
        m.fanout(false);
        let text = m.render(3);
        assert!(text.contains("palaver_sessions 3"));
        assert!(text.contains("palaver_requests_total{kind=\"pub\"} 1"));
        assert!(text.contains("palaver_request_errors_total{code=\"404\"} 1"));
        assert!(text.contains("palaver_fanout_dropped_total 1"));
        assert_eq!(m.dropped(), 1);
    }
}
