//! The seam through which components the server wires (the plugin runtime, the Redis adapters) add their
//! counters to the node's one `/metrics` exposition.

/// A component that keeps its own counters and renders them as Prometheus text exposition sections.
///
/// Each source owns its metric names: it writes every `# HELP`/`# TYPE` pair of its families once, and no two
/// sources (nor the service's own metrics) share a family name.
pub trait MetricsSource: Send + Sync {
    /// Appends this source's families to `out`, each line ending with `\n`.
    fn render(&self, out: &mut String);
}
