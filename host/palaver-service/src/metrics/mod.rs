//! The service's own Prometheus metrics (`palaver_*`), kept as `prometheus-client` handles and registered in
//! the node's one registry ([`crate::Service::render_metrics`] encodes it). The plugin runtime
//! (`palaver_plugin_*`), the Redis adapters (`palaver_redis_*`) and the queue (`palaver_kafka_*`) register
//! theirs behind [`palaver_core::MetricsSource`]; `docs/metrics.md` lists them all (the tidy test keeps it
//! complete). Counters are registered without their `_total` suffix, which the encoder appends.

use palaver_core::latency_histogram;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

mod register;

/// The message kinds counted per request, in wire order.
const KINDS: [&str; 10] = ["hi", "acc", "login", "sub", "leave", "pub", "get", "set", "del", "note"];

/// One label, by name; each family below has one.
macro_rules! label {
    ($name:ident, $key:ident) => {
        #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
        pub(crate) struct $name {
            $key: &'static str,
        }
    };
}
label!(Kind, kind);
label!(Outcome, outcome);
label!(Via, via);
label!(Reason, reason);
label!(TransportLabel, transport);
label!(Route, route);
label!(Dependency, dependency);
label!(What, what);
label!(Method, method);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CodeSend {
    method: &'static str,
    purpose: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ErrorCode {
    code: u16,
}

type Counters<L> = Family<L, Counter>;
type Latencies<L> = Family<L, Histogram, fn() -> Histogram>;

fn latencies<L: Clone + std::hash::Hash + Eq>() -> Latencies<L> {
    Family::new_with_constructor(latency_histogram as fn() -> Histogram)
}

/// A credential method as a label: the known ones by name, so no client input becomes a label value.
fn known_method(method: &str) -> &'static str {
    crate::usecases::credentials::METHODS.iter().find(|m| **m == method).copied().unwrap_or("other")
}

/// Bounds of `palaver_business_rule_seconds`: every 2 µs up to 40 µs, where a warm plugin call lands, so a
/// benchmark can read its median to the microsecond, then coarser up to the slowest deadline a manifest may set.
const RULE_BUCKETS: [f64; 33] = [
    0.000002, 0.000004, 0.000006, 0.000008, 0.00001, 0.000012, 0.000014, 0.000016, 0.000018, 0.00002, 0.000022,
    0.000024, 0.000026, 0.000028, 0.00003, 0.000035, 0.00004, 0.00005, 0.00006, 0.00008, 0.0001, 0.00015, 0.0002,
    0.0003, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

/// Bounds of `palaver_seq_run_messages`: one message per allocation on a quiet topic, up to the most a
/// session's in-flight window times several publishers can put in one run.
const RUN_BUCKETS: [f64; 10] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Metrics shared by every session of the node.
#[derive(Debug)]
pub struct Metrics {
    sessions: Gauge,
    loaded_topics: Gauge,
    sessions_opened: Counter,
    sessions_by_transport: Family<TransportLabel, Gauge>,
    requests: Counters<Kind>,
    request_seconds: Latencies<Kind>,
    malformed: Counter,
    errors: Counters<ErrorCode>,
    messages_stored: Counter,
    message_retries: Counter,
    idempotency: Counters<Outcome>,
    seq_rebaselines: Counter,
    seq_runs: Histogram,
    db_append_seconds: Histogram,
    conditional_failures: Counters<What>,
    fanout_frames: Counter,
    fanout_dropped: Counter,
    fanout_seconds: Histogram,
    bus_published: Counters<Kind>,
    bus_publish_failed: Counter,
    bus_received: Counters<Outcome>,
    bus_fanout: Counters<Outcome>,
    bus_latency: Histogram,
    sessions_controlled: Counters<Via>,
    business_commands: Counters<Outcome>,
    business_micros: Counter,
    admin_commands: Counters<Outcome>,
    rule_seconds: Histogram,
    refused: Counters<Reason>,
    connections: Gauge,
    connections_refused: Counter,
    accept_errors: Counter,
    accept_restarts: Counter,
    connection_timeouts: Counters<Kind>,
    queue_overflows: Counter,
    heartbeat_failures: Counters<What>,
    http_seconds: Latencies<Route>,
    dependency_up: Family<Dependency, Gauge>,
    config_refreshes: Counters<Outcome>,
    files_uploaded: Counter,
    file_upload_bytes: Counter,
    files_collected: Counter,
    files_scanned: Counters<Outcome>,
    codes_sent: Counters<CodeSend>,
    credentials_confirmed: Counters<Method>,
}

impl Default for Metrics {
    fn default() -> Self {
        let m = Metrics {
            sessions: Gauge::default(),
            loaded_topics: Gauge::default(),
            sessions_opened: Counter::default(),
            sessions_by_transport: Family::default(),
            requests: Family::default(),
            request_seconds: latencies(),
            malformed: Counter::default(),
            errors: Family::default(),
            messages_stored: Counter::default(),
            message_retries: Counter::default(),
            idempotency: Family::default(),
            seq_rebaselines: Counter::default(),
            seq_runs: Histogram::new(RUN_BUCKETS),
            db_append_seconds: latency_histogram(),
            conditional_failures: Family::default(),
            fanout_frames: Counter::default(),
            fanout_dropped: Counter::default(),
            fanout_seconds: latency_histogram(),
            bus_published: Family::default(),
            bus_publish_failed: Counter::default(),
            bus_received: Family::default(),
            bus_fanout: Family::default(),
            bus_latency: latency_histogram(),
            sessions_controlled: Family::default(),
            business_commands: Family::default(),
            business_micros: Counter::default(),
            admin_commands: Family::default(),
            rule_seconds: Histogram::new(RULE_BUCKETS),
            refused: Family::default(),
            connections: Gauge::default(),
            connections_refused: Counter::default(),
            accept_errors: Counter::default(),
            accept_restarts: Counter::default(),
            connection_timeouts: Family::default(),
            queue_overflows: Counter::default(),
            heartbeat_failures: Family::default(),
            http_seconds: latencies(),
            dependency_up: Family::default(),
            config_refreshes: Family::default(),
            files_uploaded: Counter::default(),
            file_upload_bytes: Counter::default(),
            files_collected: Counter::default(),
            files_scanned: Family::default(),
            codes_sent: Family::default(),
            credentials_confirmed: Family::default(),
        };
        // The known label values show from the start (at zero), so that rates and alerts exist before the first use.
        for kind in KINDS {
            drop(m.requests.get_or_create(&Kind { kind }));
        }
        for outcome in ["deliver", "no_local_topic", "no_local_session", "hub_full"] {
            drop(m.bus_fanout.get_or_create(&Outcome { outcome }));
        }
        for outcome in ["applied", "loopback", "duplicate", "malformed", "mismatch", "queue_full"] {
            drop(m.bus_received.get_or_create(&Outcome { outcome }));
        }
        for reason in ["after_close", "lp_total", "lp_per_ip", "send_deadline"] {
            drop(m.refused.get_or_create(&Reason { reason }));
        }
        for code in [400, 401, 403, 404, 409, 429, 500, 503] {
            drop(m.errors.get_or_create(&ErrorCode { code }));
        }
        for route in ["/livez", "/readyz", "/metrics"] {
            drop(m.http_seconds.get_or_create(&Route { route }));
        }
        for transport in ["ws", "lp"] {
            drop(m.sessions_by_transport.get_or_create(&TransportLabel { transport }));
        }
        m
    }
}

/// Keeps a session counted in its transport's gauge while it lives.
#[derive(Debug)]
pub struct LiveGauge(Gauge);

impl Drop for LiveGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    pub(crate) fn set_loaded_topics(&self, n: usize) {
        self.loaded_topics.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub(crate) fn set_sessions(&self, n: usize) {
        self.sessions.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub(crate) fn session_opened(&self, transport: &'static str) -> LiveGauge {
        self.sessions_opened.inc();
        let gauge = self.sessions_by_transport.get_or_create_owned(&TransportLabel { transport });
        gauge.inc();
        LiveGauge(gauge)
    }

    pub(crate) fn request(&self, kind: &str) {
        if let Some(kind) = KINDS.iter().find(|k| **k == kind) {
            self.requests.get_or_create(&Kind { kind }).inc();
        }
    }

    /// Times a handled request, by kind: `pub` is the publish-to-ack latency, `login` the login latency.
    pub(crate) fn request_done(&self, kind: &str, took: Duration) {
        if let Some(kind) = KINDS.iter().find(|k| **k == kind) {
            self.request_seconds.get_or_create(&Kind { kind }).observe(seconds(took));
        }
    }

    pub(crate) fn malformed(&self) {
        self.malformed.inc();
    }

    pub(crate) fn error(&self, code: u16) {
        self.errors.get_or_create(&ErrorCode { code }).inc();
    }

    /// One upload of `size` bytes stored.
    pub(crate) fn file_uploaded(&self, size: u64) {
        self.files_uploaded.inc();
        self.file_upload_bytes.inc_by(size);
    }

    /// Unreferenced uploads removed by a collection pass.
    pub(crate) fn files_collected(&self, n: usize) {
        self.files_collected.inc_by(n as u64);
    }

    /// One file-security task done: `clean`, `blocked`, `review`, or `failed` (retries exhausted, left pending).
    pub(crate) fn file_scanned(&self, outcome: &'static str) {
        self.files_scanned.get_or_create(&Outcome { outcome }).inc();
    }

    /// One confirmation or reset code asked for: `sent`, `limited` (over the address's hourly sends), `refused`
    /// (the provider refused the address) or `failed` (the provider was unavailable).
    pub(crate) fn code_sent(&self, method: &str, purpose: palaver_core::ports::CodePurpose, outcome: &'static str) {
        let method = known_method(method);
        let purpose = crate::usecases::credentials::purpose_name(purpose);
        self.codes_sent.get_or_create(&CodeSend { method, purpose, outcome }).inc();
    }

    /// One credential confirmed with its code.
    pub(crate) fn credential_confirmed(&self, method: &str) {
        self.credentials_confirmed.get_or_create(&Method { method: known_method(method) }).inc();
    }

    pub(crate) fn message_stored(&self) {
        self.messages_stored.inc();
    }

    pub(crate) fn message_retry(&self) {
        self.message_retries.inc();
    }

    /// Counts a `client_mid` claim: `acquired` (a new message), `done` (answered from an earlier attempt),
    /// `pending` (an attempt still running).
    pub(crate) fn idempotency(&self, outcome: &'static str) {
        self.idempotency.get_or_create(&Outcome { outcome }).inc();
    }

    /// Times one message append to the store (any adapter; with MySQL it includes the wait for its batch).
    pub(crate) fn db_append(&self, took: Duration) {
        self.db_append_seconds.observe(seconds(took));
    }

    pub(crate) fn seq_rebaselined(&self) {
        self.seq_rebaselines.inc();
    }

    /// Counts one seq allocation of a topic's drain and the messages it gave seqs to.
    pub(crate) fn seq_run(&self, messages: usize) {
        self.seq_runs.observe(messages as f64);
    }

    /// Counts a conditional write the database refused (a seq taken, a state already moved on).
    pub(crate) fn conditional_failed(&self, what: &'static str) {
        self.conditional_failures.get_or_create(&What { what }).inc();
    }

    pub(crate) fn fanout(&self, delivered: bool) {
        if delivered {
            self.fanout_frames.inc()
        } else {
            self.fanout_dropped.inc()
        };
    }

    /// Times the application of one event to this node's sessions.
    pub(crate) fn fanout_took(&self, took: Duration) {
        self.fanout_seconds.observe(seconds(took));
    }

    pub(crate) fn bus_published(&self, kind: &'static str, ok: bool) {
        if ok {
            self.bus_published.get_or_create(&Kind { kind }).inc()
        } else {
            self.bus_publish_failed.inc()
        };
    }

    pub(crate) fn bus_received(&self, outcome: &'static str) {
        self.bus_received.get_or_create(&Outcome { outcome }).inc();
    }

    /// Counts what became of a remote event here: `deliver`, `no_local_topic`, `no_local_session`, `hub_full`.
    pub(crate) fn bus_fanout(&self, outcome: &'static str) {
        self.bus_fanout.get_or_create(&Outcome { outcome }).inc();
    }

    /// Records how long a remote event took from its publication (the source node's clock) to here.
    pub(crate) fn bus_latency(&self, took: Duration) {
        self.bus_latency.observe(seconds(took));
    }

    pub(crate) fn session_controlled(&self, via: &'static str) {
        self.sessions_controlled.get_or_create(&Via { via }).inc();
    }

    pub(crate) fn business_command(&self, outcome: &'static str, took: Duration) {
        self.business_commands.get_or_create(&Outcome { outcome }).inc();
        self.business_micros.inc_by(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }

    /// Counts an admin command settled as `outcome`: its status (`succeeded`, `failed`, `rejected`), `repeat` (a
    /// stored result republished), `retry` (a transient failure) or `dead_letter`.
    pub(crate) fn admin_command(&self, outcome: &'static str) {
        self.admin_commands.get_or_create(&Outcome { outcome }).inc();
    }

    pub(crate) fn rule_call(&self, took: Duration) {
        self.rule_seconds.observe(seconds(took));
    }

    /// Counts a client frame dropped because the server had already closed its session.
    pub(crate) fn refused_after_close(&self) {
        self.refused("after_close");
    }

    /// Counts a request refused by a protection, with the reason as its label.
    pub fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&Reason { reason }).inc();
    }

    /// How many requests a protection refused for `reason`.
    pub fn refused_count(&self, reason: &'static str) -> u64 {
        self.refused.get(&Reason { reason }).map_or(0, |c| c.get())
    }

    /// Counts a new connection; returns how many are open, this one included.
    pub fn connection_opened(&self) -> u64 {
        u64::try_from(self.connections.inc() + 1).unwrap_or(0)
    }

    /// Counts a connection closed (its descriptor released).
    pub fn connection_closed(&self) {
        self.connections.dec();
    }

    /// Connections open now.
    pub fn connections(&self) -> u64 {
        u64::try_from(self.connections.get()).unwrap_or(0)
    }

    /// Counts a connection answered 503 because the node is at `server.max_connections`.
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    /// Counts a failed `accept` (such as EMFILE), after which the listener backs off and goes on.
    pub fn accept_error(&self) {
        self.accept_errors.inc();
    }

    /// Counts a restart of an accept loop that ended with an error or a panic.
    pub fn accept_restart(&self) {
        self.accept_restarts.inc();
    }

    /// Counts a connection closed by a timeout: `header`, `http_idle`, `ws_handshake` or `write`.
    pub fn connection_timeout(&self, kind: &'static str) {
        self.connection_timeouts.get_or_create(&Kind { kind }).inc();
    }

    pub(crate) fn queue_overflow(&self) {
        self.queue_overflows.inc();
    }

    /// Counts a failed heartbeat: `presence` (the sessions' shared presence) or `node` (the node id claim).
    pub fn heartbeat_failed(&self, what: &'static str) {
        self.heartbeat_failures.get_or_create(&What { what }).inc();
    }

    /// Times an HTTP API request by its route (a path pattern, never a raw path: ids would explode the series).
    pub fn http_request(&self, route: &'static str, took: Duration) {
        self.http_seconds.get_or_create(&Route { route }).observe(seconds(took));
    }

    /// Sets whether a dependency (`database`, `redis`, `bus`, `queue`) answered its last check.
    pub fn dependency_up(&self, dependency: &'static str, up: bool) {
        self.dependency_up.get_or_create(&Dependency { dependency }).set(i64::from(up));
    }

    /// Counts a configuration refresh (SIGHUP or the admin rescan), `ok` or `failed`.
    pub fn config_refreshed(&self, ok: bool) {
        self.config_refreshes.get_or_create(&Outcome { outcome: if ok { "ok" } else { "failed" } }).inc();
    }

    /// Envelopes received from other nodes with `outcome` (`applied`, `loopback`, `duplicate`, `malformed`,
    /// `mismatch`, `queue_full`).
    pub fn bus_received_count(&self, outcome: &'static str) -> u64 {
        self.bus_received.get(&Outcome { outcome }).map_or(0, |c| c.get())
    }

    /// Frames dropped because a session's queue was full.
    pub fn dropped(&self) -> u64 {
        self.fanout_dropped.get()
    }
}
