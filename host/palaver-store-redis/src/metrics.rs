//! Counters for the Redis metrics: commands and their failures, cache hit rate, reads served by
//! the database because Redis failed or missed, invalidations that could not be applied, and the realtime
//! bus's traffic and losses.
//!
//! The counters are `prometheus-client` handles owned by one `RedisClient` (no globals); as a
//! [`palaver_core::MetricsSource`] they register under `palaver_redis_*` in the node's registry. Besides the
//! counters: the command latency histogram and the degradation gauge (1 while Redis fails).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

/// Live counters, shared by every adapter built on the same client.
#[derive(Debug)]
pub struct RedisMetrics {
    command_seconds: Histogram,
    degraded: Gauge,
    invalidations: Counter,
    presence_expired: Counter,
    commands: Counter,
    command_failures: Counter,
    cache_hits: Counter,
    cache_misses: Counter,
    fallbacks: Counter,
    invalidation_failures: Counter,
    fill_failures: Counter,
    hot_hits: Counter,
    hot_misses: Counter,
    hot_write_failures: Counter,
    presence_unknown: Counter,
    bus_published: Counter,
    bus_publish_commands: Counter,
    bus_dropped_full: Counter,
    bus_publish_errors: Counter,
    bus_received: Counter,
    bus_loopback_dropped: Counter,
    bus_duplicate_dropped: Counter,
    bus_cross_tenant_dropped: Counter,
    bus_reconnects: Counter,
}

impl Default for RedisMetrics {
    fn default() -> Self {
        RedisMetrics {
            command_seconds: palaver_core::latency_histogram(),
            degraded: Gauge::default(),
            invalidations: Counter::default(),
            presence_expired: Counter::default(),
            commands: Counter::default(),
            command_failures: Counter::default(),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            fallbacks: Counter::default(),
            invalidation_failures: Counter::default(),
            fill_failures: Counter::default(),
            hot_hits: Counter::default(),
            hot_misses: Counter::default(),
            hot_write_failures: Counter::default(),
            presence_unknown: Counter::default(),
            bus_published: Counter::default(),
            bus_publish_commands: Counter::default(),
            bus_dropped_full: Counter::default(),
            bus_publish_errors: Counter::default(),
            bus_received: Counter::default(),
            bus_loopback_dropped: Counter::default(),
            bus_duplicate_dropped: Counter::default(),
            bus_cross_tenant_dropped: Counter::default(),
            bus_reconnects: Counter::default(),
        }
    }
}

/// A point-in-time copy of [`RedisMetrics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Commands, pipelines and scripts sent.
    pub commands: u64,
    /// Of those, the ones that failed or timed out.
    pub command_failures: u64,
    /// Cache-aside reads answered from Redis.
    pub cache_hits: u64,
    /// Cache-aside reads that found nothing usable in Redis.
    pub cache_misses: u64,
    /// Reads answered by the inner store because Redis failed (the back-to-source count on faults).
    pub fallbacks: u64,
    /// Writes that succeeded in the inner store but whose Redis copy could not be dropped or updated.
    pub invalidation_failures: u64,
    /// Copies that could not be written after a miss; harmless, counted to spot a sick Redis.
    pub fill_failures: u64,
    /// History windows answered from hot message copies.
    pub hot_hits: u64,
    /// History windows the hot copies could not answer whole (gap, deletion, held message, expired).
    pub hot_misses: u64,
    /// Stored messages whose hot copy could not be written.
    pub hot_write_failures: u64,
    /// Presence reads answered `Unknown` because Redis failed.
    pub presence_unknown: u64,
    /// Envelopes the bus handed to Redis.
    pub bus_published: u64,
    /// The `PUBLISH` commands those cost (zero for an envelope no other node needs, several for a topic spread
    /// over several nodes).
    pub bus_publish_commands: u64,
    /// Envelopes refused because the publish queue was full.
    pub bus_dropped_full: u64,
    /// Envelopes dropped because Redis failed their batch (or because they could not be encoded).
    pub bus_publish_errors: u64,
    /// Messages the subscriber read, before any of the drops below.
    pub bus_received: u64,
    /// Messages this node had published itself.
    pub bus_loopback_dropped: u64,
    /// Messages whose event id was delivered already.
    pub bus_duplicate_dropped: u64,
    /// Messages whose envelope named another tenant than their channel, or that did not decode.
    pub bus_cross_tenant_dropped: u64,
    /// Times the subscriber connection was lost and established again.
    pub bus_reconnects: u64,
}

fn bump(counter: &Counter) {
    counter.inc();
}

impl RedisMetrics {
    /// Copies every counter.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |c: &Counter| c.get();
        MetricsSnapshot {
            commands: get(&self.commands),
            command_failures: get(&self.command_failures),
            cache_hits: get(&self.cache_hits),
            cache_misses: get(&self.cache_misses),
            fallbacks: get(&self.fallbacks),
            invalidation_failures: get(&self.invalidation_failures),
            fill_failures: get(&self.fill_failures),
            hot_hits: get(&self.hot_hits),
            hot_misses: get(&self.hot_misses),
            hot_write_failures: get(&self.hot_write_failures),
            presence_unknown: get(&self.presence_unknown),
            bus_published: get(&self.bus_published),
            bus_publish_commands: get(&self.bus_publish_commands),
            bus_dropped_full: get(&self.bus_dropped_full),
            bus_publish_errors: get(&self.bus_publish_errors),
            bus_received: get(&self.bus_received),
            bus_loopback_dropped: get(&self.bus_loopback_dropped),
            bus_duplicate_dropped: get(&self.bus_duplicate_dropped),
            bus_cross_tenant_dropped: get(&self.bus_cross_tenant_dropped),
            bus_reconnects: get(&self.bus_reconnects),
        }
    }

    pub(crate) fn command(&self) {
        bump(&self.commands);
    }
    /// Times a command (or pipeline, or script) and records whether Redis answered: the degradation gauge
    /// is 1 from a transport failure or timeout until the next command succeeds.
    pub(crate) fn command_done(&self, took: Duration, redis_unavailable: bool) {
        self.command_seconds.observe(took.as_secs_f64());
        self.degraded.set(i64::from(redis_unavailable));
    }
    /// A command refused without trying, because the circuit is open: Redis is still taken as down.
    pub(crate) fn circuit_open(&self) {
        self.degraded.set(1);
    }
    pub(crate) fn presence_expired(&self, sessions: u64) {
        self.presence_expired.inc_by(sessions);
    }
    pub(crate) fn invalidated(&self) {
        bump(&self.invalidations);
    }
    pub(crate) fn command_failed(&self) {
        bump(&self.command_failures);
    }
    pub(crate) fn cache_hit(&self) {
        bump(&self.cache_hits);
    }
    pub(crate) fn cache_miss(&self) {
        bump(&self.cache_misses);
    }
    pub(crate) fn fallback(&self) {
        bump(&self.fallbacks);
    }
    pub(crate) fn invalidation_failed(&self) {
        bump(&self.invalidation_failures);
    }
    pub(crate) fn fill_failed(&self) {
        bump(&self.fill_failures);
    }
    pub(crate) fn hot_hit(&self) {
        bump(&self.hot_hits);
    }
    pub(crate) fn hot_miss(&self) {
        bump(&self.hot_misses);
    }
    pub(crate) fn hot_write_failed(&self) {
        bump(&self.hot_write_failures);
    }
    pub(crate) fn presence_unknown(&self) {
        bump(&self.presence_unknown);
    }
    pub(crate) fn bus_published(&self, envelopes: u64, commands: u64) {
        self.bus_published.inc_by(envelopes);
        self.bus_publish_commands.inc_by(commands);
    }
    pub(crate) fn bus_dropped_full(&self) {
        bump(&self.bus_dropped_full);
    }
    pub(crate) fn bus_publish_failed(&self, envelopes: u64) {
        self.bus_publish_errors.inc_by(envelopes);
    }
    pub(crate) fn bus_received(&self) {
        bump(&self.bus_received);
    }
    pub(crate) fn bus_loopback_dropped(&self) {
        bump(&self.bus_loopback_dropped);
    }
    pub(crate) fn bus_duplicate_dropped(&self) {
        bump(&self.bus_duplicate_dropped);
    }
    pub(crate) fn bus_cross_tenant_dropped(&self) {
        bump(&self.bus_cross_tenant_dropped);
    }
    pub(crate) fn bus_reconnected(&self) {
        bump(&self.bus_reconnects);
    }
}

/// Every counter: its metric name, help text and where it is in a snapshot.
type Family = (&'static str, &'static str, fn(&RedisMetrics) -> &Counter);

const FAMILIES: [Family; 20] = [
    ("palaver_redis_commands", "Redis commands, pipelines and scripts sent", |m| &m.commands),
    ("palaver_redis_command_failures", "Redis commands that failed or timed out", |m| &m.command_failures),
    ("palaver_redis_cache_hits", "Cache-aside reads answered from Redis", |m| &m.cache_hits),
    ("palaver_redis_cache_misses", "Cache-aside reads that found nothing usable in Redis", |m| &m.cache_misses),
    ("palaver_redis_fallbacks", "Reads answered by the database because Redis failed", |m| &m.fallbacks),
    ("palaver_redis_invalidation_failures", "Database writes whose Redis copy could not be dropped or updated", |m| {
        &m.invalidation_failures
    }),
    ("palaver_redis_fill_failures", "Cache copies that could not be written after a miss", |m| &m.fill_failures),
    ("palaver_redis_hot_hits", "History windows answered from hot message copies", |m| &m.hot_hits),
    ("palaver_redis_hot_misses", "History windows the hot message copies could not answer whole", |m| &m.hot_misses),
    ("palaver_redis_hot_write_failures", "Stored messages whose hot copy could not be written", |m| {
        &m.hot_write_failures
    }),
    ("palaver_redis_presence_unknown", "Presence reads answered unknown because Redis failed", |m| &m.presence_unknown),
    ("palaver_redis_bus_published", "Envelopes the Redis bus handed to Redis", |m| &m.bus_published),
    ("palaver_redis_bus_publish_commands", "PUBLISH commands the bus envelopes cost", |m| &m.bus_publish_commands),
    ("palaver_redis_bus_dropped_full", "Envelopes refused because the bus publish queue was full", |m| {
        &m.bus_dropped_full
    }),
    ("palaver_redis_bus_publish_errors", "Envelopes dropped because Redis failed their batch", |m| {
        &m.bus_publish_errors
    }),
    ("palaver_redis_bus_received", "Messages the bus subscriber read, before any drop", |m| &m.bus_received),
    ("palaver_redis_bus_loopback_dropped", "Bus messages dropped because this node published them", |m| {
        &m.bus_loopback_dropped
    }),
    ("palaver_redis_bus_duplicate_dropped", "Bus messages dropped because their event was delivered", |m| {
        &m.bus_duplicate_dropped
    }),
    (
        "palaver_redis_bus_cross_tenant_dropped",
        "Bus messages dropped because they named another tenant than their channel or did not decode",
        |m| &m.bus_cross_tenant_dropped,
    ),
    ("palaver_redis_bus_reconnects", "Times the bus subscriber connection was established again", |m| {
        &m.bus_reconnects
    }),
];

/// The metrics in the node's registry, next to the service's own.
impl palaver_core::MetricsSource for RedisMetrics {
    fn register(&self, r: &mut palaver_core::Registry) {
        for (name, help, counter) in FAMILIES {
            r.register(name, help, counter(self).clone());
        }
        r.register(
            "palaver_redis_invalidations",
            "Cached copies dropped or updated after a database write",
            self.invalidations.clone(),
        );
        r.register(
            "palaver_redis_presence_expired",
            "Sessions aged out of the shared presence because their TTL passed without a heartbeat",
            self.presence_expired.clone(),
        );
        r.register(
            "palaver_redis_command_duration_seconds",
            "Time of Redis commands, pipelines and scripts, timeouts included",
            self.command_seconds.clone(),
        );
        r.register(
            "palaver_redis_degraded",
            "1 while Redis fails (its last command failed in transport or timed out), else 0",
            self.degraded.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_copies_each_counter() {
        let m = RedisMetrics::default();
        m.command();
        m.command();
        m.command_failed();
        m.cache_hit();
        m.fallback();
        m.hot_miss();
        let s = m.snapshot();
        assert_eq!((s.commands, s.command_failures, s.cache_hits, s.fallbacks, s.hot_misses), (2, 1, 1, 1, 1));
        assert_eq!(s.invalidation_failures, 0);
        m.bus_published(3, 5);
        m.bus_publish_failed(2);
        m.bus_dropped_full();
        m.bus_reconnected();
        let s = m.snapshot();
        assert_eq!((s.bus_published, s.bus_publish_commands, s.bus_publish_errors), (3, 5, 2));
        assert_eq!((s.bus_dropped_full, s.bus_reconnects, s.bus_received), (1, 1, 0));
    }

    #[test]
    fn renders_each_counter_once() {
        use palaver_core::MetricsSource;
        let m = RedisMetrics::default();
        m.bus_reconnected();
        m.cache_hit();
        m.command_done(Duration::from_millis(2), true);
        let mut registry = palaver_core::Registry::default();
        m.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        assert!(out.contains("palaver_redis_bus_reconnects_total 1\n"), "{out}");
        assert!(out.contains("palaver_redis_cache_hits_total 1\n"), "{out}");
        assert!(out.contains("palaver_redis_degraded 1\n"), "{out}");
        assert!(out.contains("palaver_redis_command_duration_seconds_count 1\n"), "{out}");
        assert_eq!(out.matches("# TYPE ").count(), 24, "{out}");
        let names: std::collections::BTreeSet<&str> = FAMILIES.iter().map(|f| f.0).collect();
        assert_eq!(names.len(), FAMILIES.len());
    }
}
