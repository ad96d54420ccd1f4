//! Counters for the Redis metrics: commands and their failures, cache hit rate, reads served by
//! the database because Redis failed or missed, invalidations that could not be applied, and the realtime
//! bus's traffic and losses.
//!
//! The counters are plain atomics owned by one `RedisClient` (no globals); as a
//! [`palaver_core::MetricsSource`] they render under `palaver_redis_*` in the node's `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters, shared by every adapter built on the same client.
#[derive(Debug, Default)]
pub struct RedisMetrics {
    commands: AtomicU64,
    command_failures: AtomicU64,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    fallbacks: AtomicU64,
    invalidation_failures: AtomicU64,
    fill_failures: AtomicU64,
    hot_hits: AtomicU64,
    hot_misses: AtomicU64,
    hot_write_failures: AtomicU64,
    presence_unknown: AtomicU64,
    bus_published: AtomicU64,
    bus_publish_commands: AtomicU64,
    bus_dropped_full: AtomicU64,
    bus_publish_errors: AtomicU64,
    bus_received: AtomicU64,
    bus_loopback_dropped: AtomicU64,
    bus_duplicate_dropped: AtomicU64,
    bus_cross_tenant_dropped: AtomicU64,
    bus_reconnects: AtomicU64,
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

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl RedisMetrics {
    /// Copies every counter.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
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
        self.bus_published.fetch_add(envelopes, Ordering::Relaxed);
        self.bus_publish_commands.fetch_add(commands, Ordering::Relaxed);
    }
    pub(crate) fn bus_dropped_full(&self) {
        bump(&self.bus_dropped_full);
    }
    pub(crate) fn bus_publish_failed(&self, envelopes: u64) {
        self.bus_publish_errors.fetch_add(envelopes, Ordering::Relaxed);
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
type Family = (&'static str, &'static str, fn(&MetricsSnapshot) -> u64);

const FAMILIES: [Family; 20] = [
    ("palaver_redis_commands_total", "Redis commands, pipelines and scripts sent.", |s| s.commands),
    ("palaver_redis_command_failures_total", "Redis commands that failed or timed out.", |s| s.command_failures),
    ("palaver_redis_cache_hits_total", "Cache-aside reads answered from Redis.", |s| s.cache_hits),
    ("palaver_redis_cache_misses_total", "Cache-aside reads that found nothing usable in Redis.", |s| s.cache_misses),
    ("palaver_redis_fallbacks_total", "Reads answered by the database because Redis failed.", |s| s.fallbacks),
    (
        "palaver_redis_invalidation_failures_total",
        "Database writes whose Redis copy could not be dropped or updated.",
        |s| s.invalidation_failures,
    ),
    ("palaver_redis_fill_failures_total", "Cache copies that could not be written after a miss.", |s| s.fill_failures),
    ("palaver_redis_hot_hits_total", "History windows answered from hot message copies.", |s| s.hot_hits),
    ("palaver_redis_hot_misses_total", "History windows the hot message copies could not answer whole.", |s| {
        s.hot_misses
    }),
    ("palaver_redis_hot_write_failures_total", "Stored messages whose hot copy could not be written.", |s| {
        s.hot_write_failures
    }),
    ("palaver_redis_presence_unknown_total", "Presence reads answered unknown because Redis failed.", |s| {
        s.presence_unknown
    }),
    ("palaver_redis_bus_published_total", "Envelopes the Redis bus handed to Redis.", |s| s.bus_published),
    ("palaver_redis_bus_publish_commands_total", "PUBLISH commands the bus envelopes cost.", |s| {
        s.bus_publish_commands
    }),
    ("palaver_redis_bus_dropped_full_total", "Envelopes refused because the bus publish queue was full.", |s| {
        s.bus_dropped_full
    }),
    ("palaver_redis_bus_publish_errors_total", "Envelopes dropped because Redis failed their batch.", |s| {
        s.bus_publish_errors
    }),
    ("palaver_redis_bus_received_total", "Messages the bus subscriber read, before any drop.", |s| s.bus_received),
    ("palaver_redis_bus_loopback_dropped_total", "Bus messages dropped because this node published them.", |s| {
        s.bus_loopback_dropped
    }),
    ("palaver_redis_bus_duplicate_dropped_total", "Bus messages dropped because their event was delivered.", |s| {
        s.bus_duplicate_dropped
    }),
    (
        "palaver_redis_bus_cross_tenant_dropped_total",
        "Bus messages dropped because they named another tenant than their channel or did not decode.",
        |s| s.bus_cross_tenant_dropped,
    ),
    ("palaver_redis_bus_reconnects_total", "Times the bus subscriber connection was established again.", |s| {
        s.bus_reconnects
    }),
];

/// The counters in the node's `/metrics`, after the service's own.
impl palaver_core::MetricsSource for RedisMetrics {
    fn render(&self, out: &mut String) {
        let snap = self.snapshot();
        for (name, help, value) in FAMILIES {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", value(&snap));
        }
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
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("palaver_redis_bus_reconnects_total 1\n"), "{out}");
        assert!(out.contains("palaver_redis_cache_hits_total 1\n"), "{out}");
        assert_eq!(out.matches("# TYPE ").count(), 20, "{out}");
        let names: std::collections::BTreeSet<&str> = FAMILIES.iter().map(|f| f.0).collect();
        assert_eq!(names.len(), FAMILIES.len());
    }
}
