//! Per-plugin counters and latency histograms, rendered in the Prometheus text format under `palaver_plugin_*`.
//! Counters are plain atomics bumped on the call path; rendering walks them on demand.

use crate::error::FaultKind;
use crate::manifest::Hook;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency bucket bounds, in microseconds.
const BUCKETS_US: [u64; 14] = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000];

/// What a call ended with, for the verdict counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Allow,
    Reject,
    Rewrite,
    Hold,
    Ok,
    Rejected,
}

impl Outcome {
    const ALL: [Outcome; 6] =
        [Outcome::Allow, Outcome::Reject, Outcome::Rewrite, Outcome::Hold, Outcome::Ok, Outcome::Rejected];

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Allow => "allow",
            Outcome::Reject => "reject",
            Outcome::Rewrite => "rewrite",
            Outcome::Hold => "hold",
            Outcome::Ok => "ok",
            Outcome::Rejected => "rejected",
        }
    }
}

/// A fixed-bucket latency histogram.
#[derive(Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if let Some(i) = BUCKETS_US.iter().position(|b| us <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
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
    pub(crate) latency: Histogram,
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
    pub(crate) loads_ok: AtomicU64,
    pub(crate) loads_refused: AtomicU64,
    pub(crate) effect_errors: AtomicU64,
}

impl PluginMetrics {
    pub(crate) fn hook(&self, hook: Hook) -> &HookMetrics {
        match hook {
            Hook::BeforePublish => &self.publish,
            Hook::OnCommand => &self.command,
        }
    }
}

/// What the renderer needs to know about one plugin.
pub(crate) struct Row<'a> {
    pub(crate) name: &'a str,
    pub(crate) version: Option<&'a str>,
    pub(crate) hash: Option<&'a str>,
    pub(crate) breaker_open: usize,
    pub(crate) breaker_trips: u64,
    pub(crate) instantiations: u64,
    pub(crate) metrics: &'a PluginMetrics,
}

/// A per-plugin number: its metric name, type, help text and how to read it from a row.
type Gauge = (&'static str, &'static str, &'static str, fn(&Row<'_>) -> u64);

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Renders every row in the Prometheus text exposition format.
pub(crate) fn render(rows: &[Row<'_>]) -> String {
    let mut o = String::new();
    let hooks = [Hook::BeforePublish, Hook::OnCommand];
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    family(&mut o, "palaver_plugin_info", "gauge", "The live version of each plugin.");
    for r in rows {
        let (v, h) = (r.version.unwrap_or(""), r.hash.unwrap_or(""));
        let _ = writeln!(o, "palaver_plugin_info{{plugin=\"{}\",version=\"{v}\",hash=\"{h}\"}} 1", r.name);
    }
    family(&mut o, "palaver_plugin_calls_total", "counter", "Hook calls, including faulted ones.");
    for r in rows {
        for h in hooks {
            let _ = writeln!(
                o,
                "palaver_plugin_calls_total{{plugin=\"{}\",hook=\"{h}\"}} {}",
                r.name,
                load(&r.metrics.hook(h).calls)
            );
        }
    }
    family(&mut o, "palaver_plugin_faults_total", "counter", "Calls stopped by a trap or a limit, by kind.");
    for r in rows {
        for h in hooks {
            for k in FaultKind::ALL {
                let n = r.metrics.hook(h).faults_of(k);
                let _ = writeln!(
                    o,
                    "palaver_plugin_faults_total{{plugin=\"{}\",hook=\"{h}\",kind=\"{}\"}} {n}",
                    r.name,
                    k.as_str()
                );
            }
        }
    }
    family(&mut o, "palaver_plugin_verdicts_total", "counter", "Successful calls, by verdict or outcome.");
    for r in rows {
        for h in hooks {
            for v in Outcome::ALL {
                let n = load(&r.metrics.hook(h).outcomes[v as usize]);
                let _ = writeln!(
                    o,
                    "palaver_plugin_verdicts_total{{plugin=\"{}\",hook=\"{h}\",verdict=\"{}\"}} {n}",
                    r.name,
                    v.as_str()
                );
            }
        }
    }
    family(&mut o, "palaver_plugin_rejects_total", "counter", "Messages and commands a plugin refused.");
    for r in rows {
        let p = load(&r.metrics.publish.outcomes[Outcome::Reject as usize]);
        let c = load(&r.metrics.command.outcomes[Outcome::Rejected as usize]);
        let _ = writeln!(o, "palaver_plugin_rejects_total{{plugin=\"{}\",hook=\"before-publish\"}} {p}", r.name);
        let _ = writeln!(o, "palaver_plugin_rejects_total{{plugin=\"{}\",hook=\"on-command\"}} {c}", r.name);
    }
    family(&mut o, "palaver_plugin_skipped_total", "counter", "Calls skipped because the circuit breaker was open.");
    for r in rows {
        for h in hooks {
            let _ = writeln!(
                o,
                "palaver_plugin_skipped_total{{plugin=\"{}\",hook=\"{h}\"}} {}",
                r.name,
                load(&r.metrics.hook(h).skipped)
            );
        }
    }
    family(&mut o, "palaver_plugin_fuel_consumed_total", "counter", "Fuel burned by successful calls.");
    for r in rows {
        for h in hooks {
            let _ = writeln!(
                o,
                "palaver_plugin_fuel_consumed_total{{plugin=\"{}\",hook=\"{h}\"}} {}",
                r.name,
                load(&r.metrics.hook(h).fuel)
            );
        }
    }
    family(&mut o, "palaver_plugin_call_duration_seconds", "histogram", "Wall time of hook calls.");
    for r in rows {
        for h in hooks {
            let hist = &r.metrics.hook(h).latency;
            let mut cumulative = 0;
            for (i, b) in BUCKETS_US.iter().enumerate() {
                cumulative += load(&hist.buckets[i]);
                let le = *b as f64 / 1e6;
                let _ = writeln!(
                    o,
                    "palaver_plugin_call_duration_seconds_bucket{{plugin=\"{}\",hook=\"{h}\",le=\"{le}\"}} {cumulative}",
                    r.name
                );
            }
            let count = load(&hist.count);
            let _ = writeln!(
                o,
                "palaver_plugin_call_duration_seconds_bucket{{plugin=\"{}\",hook=\"{h}\",le=\"+Inf\"}} {count}",
                r.name
            );
            let _ = writeln!(
                o,
                "palaver_plugin_call_duration_seconds_sum{{plugin=\"{}\",hook=\"{h}\"}} {}",
                r.name,
                load(&hist.sum_ns) as f64 / 1e9
            );
            let _ =
                writeln!(o, "palaver_plugin_call_duration_seconds_count{{plugin=\"{}\",hook=\"{h}\"}} {count}", r.name);
        }
    }
    let gauges: [Gauge; 6] = [
        ("palaver_plugin_breaker_open", "gauge", "Tenants for which the circuit breaker keeps the plugin off.", |r| {
            u64::try_from(r.breaker_open).unwrap_or(u64::MAX)
        }),
        ("palaver_plugin_breaker_trips_total", "counter", "How often a tenant's circuit breaker opened.", |r| {
            r.breaker_trips
        }),
        ("palaver_plugin_instantiations_total", "counter", "Instances created for the live version.", |r| {
            r.instantiations
        }),
        ("palaver_plugin_loads_total", "counter", "Versions that passed the load gate.", |r| {
            r.metrics.loads_ok.load(Ordering::Relaxed)
        }),
        ("palaver_plugin_load_refusals_total", "counter", "Versions the load gate refused.", |r| {
            r.metrics.loads_refused.load(Ordering::Relaxed)
        }),
        (
            "palaver_plugin_effect_errors_total",
            "counter",
            "Events or notifications that could not be delivered.",
            |r| r.metrics.effect_errors.load(Ordering::Relaxed),
        ),
    ];
    for (name, kind, help, value) in gauges {
        family(&mut o, name, kind, help);
        for r in rows {
            let _ = writeln!(o, "{name}{{plugin=\"{}\"}} {}", r.name, value(r));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_counts_into_cumulative_buckets() {
        let m = PluginMetrics::default();
        m.publish.latency.observe(Duration::from_micros(3));
        m.publish.latency.observe(Duration::from_micros(7));
        m.publish.latency.observe(Duration::from_secs(1));
        m.publish.calls.fetch_add(3, Ordering::Relaxed);
        m.publish.fault(FaultKind::Fuel);
        m.publish.outcome(Outcome::Reject);
        let row = Row {
            name: "p",
            version: Some("1.0.0"),
            hash: Some("ab"),
            breaker_open: 0,
            breaker_trips: 0,
            instantiations: 2,
            metrics: &m,
        };
        let text = render(&[row]);
        assert!(text.contains("palaver_plugin_calls_total{plugin=\"p\",hook=\"before-publish\"} 3"), "{text}");
        assert!(text.contains("le=\"0.000005\"} 1"), "{text}");
        assert!(text.contains("le=\"0.00001\"} 2"), "{text}");
        assert!(text.contains("le=\"+Inf\"} 3"), "{text}");
        assert!(text.contains("kind=\"fuel\"} 1"), "{text}");
        assert!(text.contains("palaver_plugin_rejects_total{plugin=\"p\",hook=\"before-publish\"} 1"), "{text}");
        assert!(text.contains("palaver_plugin_info{plugin=\"p\",version=\"1.0.0\",hash=\"ab\"} 1"), "{text}");
        assert_eq!(m.publish.faults(), 1);
    }
}
