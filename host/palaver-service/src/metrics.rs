//! The service's own Prometheus metrics (`palaver_*`). The plugin runtime (`palaver_plugin_*`) and the Redis
//! adapters (`palaver_redis_*`) render theirs behind [`palaver_core::MetricsSource`], appended by
//! `Service::render_metrics`; `docs/metrics.md` lists them all (the tidy test keeps it complete).

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
    /// Topics loaded on the node, as of the last scrape.
    loaded_topics: AtomicU64,
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
    /// Admin commands settled, by outcome.
    admin_commands: Mutex<BTreeMap<&'static str, u64>>,
    business_micros: AtomicU64,
    /// Calls to the business rules (the plugins) and the time they took in all.
    rule_calls: AtomicU64,
    rule_micros: AtomicU64,
    /// Requests refused by a protection (frames after a close, long-poll caps), by reason.
    refused: Mutex<BTreeMap<&'static str, u64>>,
    /// The listener: open connections, connections refused over the cap, accept errors, restarts of the
    /// accept loop, connections closed by a timeout (by kind), and sessions closed for an overfull queue.
    connections: AtomicU64,
    connections_refused: AtomicU64,
    accept_errors: AtomicU64,
    accept_restarts: AtomicU64,
    connection_timeouts: Mutex<BTreeMap<&'static str, u64>>,
    queue_overflows: AtomicU64,
}

impl Metrics {
    pub(crate) fn set_loaded_topics(&self, n: usize) {
        self.loaded_topics.store(n as u64, Ordering::Relaxed);
    }

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

    /// Counts an admin command settled as `outcome`: its status (`succeeded`, `failed`, `rejected`), `repeat` (a
    /// stored result republished), `retry` (a transient failure) or `dead_letter`.
    pub(crate) fn admin_command(&self, outcome: &'static str) {
        *self.admin_commands.lock().entry(outcome).or_default() += 1;
    }

    pub(crate) fn rule_call(&self, took: std::time::Duration) {
        self.rule_calls.fetch_add(1, Ordering::Relaxed);
        self.rule_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// Counts a client frame dropped because the server had already closed its session.
    pub(crate) fn refused_after_close(&self) {
        self.refused("after_close");
    }

    /// Counts a request refused by a protection, with the reason as its label.
    pub fn refused(&self, reason: &'static str) {
        *self.refused.lock().entry(reason).or_default() += 1;
    }

    /// How many requests a protection refused for `reason`.
    pub fn refused_count(&self, reason: &str) -> u64 {
        self.refused.lock().get(reason).copied().unwrap_or(0)
    }

    /// Counts a new connection; returns how many are open, this one included.
    pub fn connection_opened(&self) -> u64 {
        self.connections.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Counts a connection closed (its descriptor released).
    pub fn connection_closed(&self) {
        self.connections.fetch_sub(1, Ordering::AcqRel);
    }

    /// Connections open now.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Acquire)
    }

    /// Counts a connection answered 503 because the node is at `server.max_connections`.
    pub fn connection_refused(&self) {
        self.connections_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed `accept` (such as EMFILE), after which the listener backs off and goes on.
    pub fn accept_error(&self) {
        self.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a restart of an accept loop that ended with an error or a panic.
    pub fn accept_restart(&self) {
        self.accept_restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection closed by a timeout: `header`, `http_idle`, `ws_handshake` or `write`.
    pub fn connection_timeout(&self, kind: &'static str) {
        *self.connection_timeouts.lock().entry(kind).or_default() += 1;
    }

    pub(crate) fn queue_overflow(&self) {
        self.queue_overflows.fetch_add(1, Ordering::Relaxed);
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
            "palaver_loaded_topics",
            "gauge",
            "Topics loaded on this node (ordering lock, seq floor and caches), bounded by limits.max_loaded_topics.",
            &[(String::new(), load(&self.loaded_topics))],
        );
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
            "palaver_admin_commands_total",
            "counter",
            "Admin commands settled, by outcome (succeeded, failed, rejected, repeat, retry, dead_letter).",
            &labelled(&self.admin_commands, "outcome"),
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
        metric(
            "palaver_security_refused_total",
            "counter",
            "Requests refused by a protection, by reason (after_close, lp_total, lp_per_ip).",
            &labelled(&self.refused, "reason"),
        );
        metric(
            "palaver_connections",
            "gauge",
            "Open client connections (HTTP, WebSocket) on the main listener.",
            &[(String::new(), load(&self.connections))],
        );
        metric(
            "palaver_connections_refused_total",
            "counter",
            "Connections answered 503 because server.max_connections were open.",
            &[(String::new(), load(&self.connections_refused))],
        );
        metric(
            "palaver_accept_errors_total",
            "counter",
            "Failed accepts (such as EMFILE); the listener backs off and goes on.",
            &[(String::new(), load(&self.accept_errors))],
        );
        metric(
            "palaver_accept_restarts_total",
            "counter",
            "Accept loops restarted after ending with an error or a panic.",
            &[(String::new(), load(&self.accept_restarts))],
        );
        metric(
            "palaver_connection_timeouts_total",
            "counter",
            "Connections closed by a timeout, by kind (header, http_idle, ws_handshake, write).",
            &labelled(&self.connection_timeouts, "kind"),
        );
        metric(
            "palaver_session_queue_overflows_total",
            "counter",
            "Sessions closed because a reply would have taken their queue past limits.session_queue_bytes.",
            &[(String::new(), load(&self.queue_overflows))],
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
        m.admin_command("repeat");
        let text = m.render(3);
        assert!(text.contains("palaver_admin_commands_total{outcome=\"repeat\"} 1"), "{text}");
        assert!(text.contains("palaver_sessions 3"));
        assert!(text.contains("palaver_requests_total{kind=\"pub\"} 1"));
        assert!(text.contains("palaver_request_errors_total{code=\"404\"} 1"));
        assert!(text.contains("palaver_fanout_dropped_total 1"));
        assert_eq!(m.dropped(), 1);
    }
}
