//! The seam through which components the server wires (the plugin runtime, the Redis adapters, the queue)
//! register their metrics in the node's one registry, which `/metrics` encodes. The registry is the
//! `prometheus-client` crate's: plain data (atomics behind `Arc`s), no I/O.

pub use prometheus_client::registry::Registry;

/// Upper bounds (seconds) of the latency histograms of requests, storage, Redis and the bus: 100 µs to 10 s,
/// so a local SQLite append and a slow cross-region hop both land inside a bucket.
pub const LATENCY_BUCKETS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A latency histogram over [`LATENCY_BUCKETS`]; a `fn` so that it can build a `Family`'s members.
pub fn latency_histogram() -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new(LATENCY_BUCKETS)
}

/// A component that keeps its own metrics and adds them to the node's registry.
///
/// Each source owns its metric names, and no two sources (nor the service's own metrics) share one. A source
/// registers clones of its live handles (they share their values) or a collector read on each scrape.
pub trait MetricsSource: Send + Sync {
    /// Adds this source's families to `registry`; called once, when the server wires the node.
    fn register(&self, registry: &mut Registry);
}

/// The OpenMetrics text of one source alone, as `/metrics` would show its part (for tests and tools).
pub fn render(source: &dyn MetricsSource) -> String {
    let mut registry = Registry::default();
    source.register(&mut registry);
    let mut out = String::new();
    // Writing to a String cannot fail; a collector's error would leave a partial text, still readable.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}
