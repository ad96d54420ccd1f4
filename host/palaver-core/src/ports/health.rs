//! Dependency health, for the node's readiness (`/readyz`): one check per service the node stands on.
//!
//! A *required* dependency is the final authority (the database): while it fails nothing can be acknowledged,
//! so the node reports itself unready and load balancers send its clients elsewhere. The others (Redis, the
//! realtime bus, the task queue) have degraded modes (reads fall back to the database, events arrive through
//! `{get since}`, the outbox holds records), and every node shares them: failing readiness for them would take
//! the whole cluster out of its load balancer at once, so they are reported and the node stays ready.

/// One dependency's check.
#[async_trait::async_trait]
pub trait HealthCheck: Send + Sync {
    /// A short stable name, the key in the readiness body (`database`, `redis`, `bus`, `queue`).
    fn name(&self) -> &'static str;

    /// True if the node cannot serve while this check fails.
    fn required(&self) -> bool;

    /// `Err` with a reason an operator can act on when the dependency does not answer.
    async fn check(&self) -> Result<(), String>;
}
