//! Per-plugin counters and latency histograms under `palaver_plugin_*`. Counters are plain atomics bumped on
//! the call path; the registry's collector ([`encode`]) reads them on each scrape through `prometheus-client`'s
//! encoder, since the set of plugins (and their versions) changes at run time.

use crate::error::FaultKind;
use crate::http::{HttpMetrics, HttpOutcome};
use crate::manifest::Hook;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency bucket bounds, in seconds: 5 µs to 100 ms, as a warm call takes about a microsecond.
const BUCKETS: [f64; 14] =
    [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];

/// What a call ended with, for the verdict counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Allow,
    Reject,
    Rewrite,
    Hold,
    Ok,
    Rejected,
    Keep,
    Drop,
    Delay,
    Clean,
    Blocked,
    Review,
    /// A gate narrowed a join's mode.
    Restrict,
    /// A listener answered `err` (a fault is counted as a fault, not here).
    Err,
}

impl Outcome {
    const ALL: [Outcome; 14] = [
        Outcome::Allow,
        Outcome::Reject,
        Outcome::Rewrite,
        Outcome::Hold,
        Outcome::Ok,
        Outcome::Rejected,
        Outcome::Keep,
        Outcome::Drop,
        Outcome::Delay,
        Outcome::Clean,
        Outcome::Blocked,
        Outcome::Review,
        Outcome::Restrict,
        Outcome::Err,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Allow => "allow",
            Outcome::Reject => "reject",
            Outcome::Rewrite => "rewrite",
            Outcome::Hold => "hold",
            Outcome::Ok => "ok",
            Outcome::Rejected => "rejected",
            Outcome::Keep => "keep",
            Outcome::Drop => "drop",
            Outcome::Delay => "delay",
            Outcome::Clean => "clean",
            Outcome::Blocked => "blocked",
            Outcome::Review => "review",
            Outcome::Restrict => "restrict",
            Outcome::Err => "err",
        }
    }
}

/// A call latency histogram over [`BUCKETS`].
pub(crate) struct Latency(Histogram);

impl Default for Latency {
    fn default() -> Self {
        Latency(Histogram::new(BUCKETS))
    }
}

impl Latency {
    pub(crate) fn observe(&self, d: Duration) {
        self.0.observe(d.as_secs_f64());
    }
}

/// The counters of one hook of one plugin.
#[derive(Default)]
pub(crate) struct HookMetrics {
    pub(crate) calls: AtomicU64,
    faults: [AtomicU64; FaultKind::ALL.len()],
    outcomes: [AtomicU64; Outcome::ALL.len()],
    /// Calls not made because the breaker was open.
    pub(crate) skipped: AtomicU64,
    pub(crate) fuel: AtomicU64,
    pub(crate) latency: Latency,
}

impl HookMetrics {
    pub(crate) fn fault(&self, kind: FaultKind) {
        self.faults[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn outcome(&self, o: Outcome) {
        self.outcomes[o as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn faults(&self) -> u64 {
        self.faults.iter().map(|f| f.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn faults_of(&self, kind: FaultKind) -> u64 {
        self.faults[kind.index()].load(Ordering::Relaxed)
    }
}

/// The counters of one plugin, kept across its versions.
#[derive(Default)]
pub(crate) struct PluginMetrics {
    pub(crate) publish: HookMetrics,
    pub(crate) command: HookMetrics,
    pub(crate) push: HookMetrics,
    pub(crate) scan: HookMetrics,
    pub(crate) published: HookMetrics,
    pub(crate) account: HookMetrics,
    pub(crate) login: HookMetrics,
    pub(crate) join: HookMetrics,
    pub(crate) loads_ok: AtomicU64,
    pub(crate) loads_refused: AtomicU64,
    pub(crate) effect_errors: AtomicU64,
    /// Calls run again because their key-value writes met a concurrent call's.
    pub(crate) kv_retries: AtomicU64,
    /// The latest call fault, as logged (version, hook, kind and message, a panic's message first): what a
    /// plugin's author needs to see first, without the node's logs ([`crate::PluginRegistry::last_fault`]).
    pub(crate) last_fault: parking_lot::Mutex<Option<String>>,
    /// Outbound HTTP requests (the `http` import), shared with the calls' scopes.
    pub(crate) http: std::sync::Arc<HttpMetrics>,
}

impl PluginMetrics {
    pub(crate) fn hook(&self, hook: Hook) -> &HookMetrics {
        match hook {
            Hook::BeforePublish => &self.publish,
            Hook::OnCommand => &self.command,
            Hook::BeforePush => &self.push,
            Hook::ScanFile => &self.scan,
            Hook::AfterPublish => &self.published,
            Hook::OnAccount => &self.account,
            Hook::OnLogin => &self.login,
            Hook::BeforeSubscribe => &self.join,
        }
    }
}

/// What the collector needs to know about one plugin.
pub(crate) struct Row<'a> {
    pub(crate) name: &'a str,
    pub(crate) version: Option<&'a str>,
    pub(crate) hash: Option<&'a str>,
    pub(crate) breaker_open: usize,
    pub(crate) breaker_trips: u64,
    pub(crate) instantiations: u64,
    /// Whether the live version grants `http`: only those plugins show the HTTP families.
    pub(crate) http: bool,
    pub(crate) metrics: &'a PluginMetrics,
}

/// A per-plugin number: its metric name (counters without `_total`), type, help text and how to read it.
type PerPlugin = (&'static str, MetricType, &'static str, fn(&Row<'_>) -> u64);

/// A per-hook counter: its name (without `_total`), help text and how to read it.
type PerHook = (&'static str, &'static str, fn(&HookMetrics) -> u64);

const HOOKS: [Hook; Hook::ALL.len()] = Hook::ALL;

fn counter(value: u64, family: prometheus_client::encoding::MetricEncoder<'_>) -> std::fmt::Result {
    ConstCounter::new(value).encode(family)
}

/// Encodes every row's families, each family once with all plugins under it.
pub(crate) fn encode(rows: &[Row<'_>], mut e: DescriptorEncoder<'_>) -> std::fmt::Result {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    {
        let mut m =
            e.encode_descriptor("palaver_plugin_info", "The live version of each plugin", None, MetricType::Gauge)?;
        for r in rows {
            let labels = [("plugin", r.name), ("version", r.version.unwrap_or("")), ("hash", r.hash.unwrap_or(""))];
            ConstGauge::new(1i64).encode(m.encode_family(&labels)?)?;
        }
    }
    let per_hook: [PerHook; 3] = [
        ("palaver_plugin_calls", "Hook calls, including faulted ones", |h| h.calls.load(Ordering::Relaxed)),
        ("palaver_plugin_skipped", "Calls skipped because the circuit breaker was open", |h| {
            h.skipped.load(Ordering::Relaxed)
        }),
        ("palaver_plugin_fuel_consumed", "Fuel burned by successful calls", |h| h.fuel.load(Ordering::Relaxed)),
    ];
    for (name, help, value) in per_hook {
        let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
        for r in rows {
            for h in HOOKS {
                counter(value(r.metrics.hook(h)), m.encode_family(&[("plugin", r.name), ("hook", h.as_str())])?)?;
            }
        }
    }
    {
        let help = "Calls stopped by a trap or a limit, by kind";
        let mut m = e.encode_descriptor("palaver_plugin_faults", help, None, MetricType::Counter)?;
        for r in rows {
            for h in HOOKS {
                for k in FaultKind::ALL {
                    let labels = [("plugin", r.name), ("hook", h.as_str()), ("kind", k.as_str())];
                    counter(r.metrics.hook(h).faults_of(k), m.encode_family(&labels)?)?;
                }
            }
        }
    }
    {
        let help = "Successful calls, by verdict or outcome";
        let mut m = e.encode_descriptor("palaver_plugin_verdicts", help, None, MetricType::Counter)?;
        for r in rows {
            for h in HOOKS {
                for v in Outcome::ALL {
                    let labels = [("plugin", r.name), ("hook", h.as_str()), ("verdict", v.as_str())];
                    counter(load(&r.metrics.hook(h).outcomes[v as usize]), m.encode_family(&labels)?)?;
                }
            }
        }
    }
    {
        let help = "Messages, commands, logins and joins a plugin refused";
        let mut m = e.encode_descriptor("palaver_plugin_rejects", help, None, MetricType::Counter)?;
        for r in rows {
            let p = load(&r.metrics.publish.outcomes[Outcome::Reject as usize]);
            let c = load(&r.metrics.command.outcomes[Outcome::Rejected as usize]);
            counter(p, m.encode_family(&[("plugin", r.name), ("hook", "before-publish")])?)?;
            counter(c, m.encode_family(&[("plugin", r.name), ("hook", "on-command")])?)?;
            for (h, metrics) in [(Hook::OnLogin, &r.metrics.login), (Hook::BeforeSubscribe, &r.metrics.join)] {
                let n = load(&metrics.outcomes[Outcome::Reject as usize]);
                counter(n, m.encode_family(&[("plugin", r.name), ("hook", h.as_str())])?)?;
            }
        }
    }
    {
        let help = "Wall time of hook calls";
        let mut m = e.encode_descriptor("palaver_plugin_call_duration_seconds", help, None, MetricType::Histogram)?;
        for r in rows {
            for h in HOOKS {
                r.metrics.hook(h).latency.0.encode(m.encode_family(&[("plugin", r.name), ("hook", h.as_str())])?)?;
            }
        }
    }
    {
        let help = "Outbound HTTP requests of plugins (the http import), by outcome";
        let mut m = e.encode_descriptor("palaver_plugin_http_requests", help, None, MetricType::Counter)?;
        for r in rows.iter().filter(|r| r.http) {
            for o in HttpOutcome::ALL {
                counter(r.metrics.http.count(o), m.encode_family(&[("plugin", r.name), ("outcome", o.as_str())])?)?;
            }
        }
    }
    {
        let help = "Wall time of plugins' outbound HTTP requests, answered or not";
        let mut m = e.encode_descriptor("palaver_plugin_http_duration_seconds", help, None, MetricType::Histogram)?;
        for r in rows.iter().filter(|r| r.http) {
            r.metrics.http.latency.encode(m.encode_family(&[("plugin", r.name)])?)?;
        }
    }
    let per_plugin: [PerPlugin; 7] = [
        (
            "palaver_plugin_breaker_open",
            MetricType::Gauge,
            "Tenants for which the circuit breaker keeps the plugin off",
            |r| u64::try_from(r.breaker_open).unwrap_or(u64::MAX),
        ),
        ("palaver_plugin_breaker_trips", MetricType::Counter, "How often a tenant's circuit breaker opened", |r| {
            r.breaker_trips
        }),
        ("palaver_plugin_instantiations", MetricType::Counter, "Instances created for the live version", |r| {
            r.instantiations
        }),
        ("palaver_plugin_loads", MetricType::Counter, "Versions that passed the load gate", |r| {
            r.metrics.loads_ok.load(Ordering::Relaxed)
        }),
        ("palaver_plugin_load_refusals", MetricType::Counter, "Versions the load gate refused", |r| {
            r.metrics.loads_refused.load(Ordering::Relaxed)
        }),
        (
            "palaver_plugin_effect_errors",
            MetricType::Counter,
            "Events or notifications that could not be delivered",
            |r| r.metrics.effect_errors.load(Ordering::Relaxed),
        ),
        (
            "palaver_plugin_kv_retries",
            MetricType::Counter,
            "Calls run again because their key-value writes met a concurrent call's",
            |r| r.metrics.kv_retries.load(Ordering::Relaxed),
        ),
    ];
    for (name, kind, help, value) in per_plugin {
        let gauge = matches!(kind, MetricType::Gauge);
        let mut m = e.encode_descriptor(name, help, None, kind)?;
        for r in rows {
            let labels = [("plugin", r.name)];
            let family = m.encode_family(&labels)?;
            if gauge {
                ConstGauge::new(i64::try_from(value(r)).unwrap_or(i64::MAX)).encode(family)?;
            } else {
                counter(value(r), family)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct One(std::sync::Arc<PluginMetrics>);

    impl prometheus_client::collector::Collector for One {
        fn encode(&self, e: DescriptorEncoder<'_>) -> std::fmt::Result {
            let row = Row {
                name: "p",
                version: Some("1.0.0"),
                hash: Some("ab"),
                breaker_open: 0,
                breaker_trips: 0,
                instantiations: 2,
                http: true,
                metrics: &self.0,
            };
            encode(&[row], e)
        }
    }

    impl std::fmt::Debug for PluginMetrics {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("PluginMetrics")
        }
    }

    #[test]
    fn the_histogram_counts_into_cumulative_buckets() {
        let m = std::sync::Arc::new(PluginMetrics::default());
        m.publish.latency.observe(Duration::from_micros(3));
        m.publish.latency.observe(Duration::from_micros(7));
        m.publish.latency.observe(Duration::from_secs(1));
        m.publish.calls.fetch_add(3, Ordering::Relaxed);
        m.publish.fault(FaultKind::Fuel);
        m.publish.outcome(Outcome::Reject);
        m.scan.outcome(Outcome::Blocked);
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(One(m.clone())));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("palaver_plugin_calls_total{plugin=\"p\",hook=\"before-publish\"} 3"), "{text}");
        let bucket = |le: &str| {
            format!("palaver_plugin_call_duration_seconds_bucket{{le=\"{le}\",plugin=\"p\",hook=\"before-publish\"}}")
        };
        assert!(
            text.contains(&format!("{} 1", bucket(&format!("{}", 0.000005f64))))
                || text.contains(&format!("{} 1", bucket("5e-6"))),
            "{text}"
        );
        assert!(text.contains(&format!("{} 3", bucket("+Inf"))), "{text}");
        assert!(text.contains("kind=\"fuel\"} 1"), "{text}");
        assert!(text.contains("palaver_plugin_rejects_total{plugin=\"p\",hook=\"before-publish\"} 1"), "{text}");
        assert!(text.contains("palaver_plugin_info{plugin=\"p\",version=\"1.0.0\",hash=\"ab\"} 1"), "{text}");
        let blocked = "palaver_plugin_verdicts_total{plugin=\"p\",hook=\"scan-file\",verdict=\"blocked\"} 1";
        assert!(text.contains(blocked), "{text}");
        assert!(text.contains("palaver_plugin_instantiations_total{plugin=\"p\"} 2"), "{text}");
        let http_ok = "palaver_plugin_http_requests_total{plugin=\"p\",outcome=\"ok\"} 0";
        assert!(text.contains(http_ok), "{text}");
        assert!(text.contains("palaver_plugin_http_duration_seconds_count{plugin=\"p\"} 0"), "{text}");
        assert_eq!(m.publish.faults(), 1);
    }
}
