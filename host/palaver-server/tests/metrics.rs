//! The node's one `/metrics` exposition carries the counters of every component the server wires: the
//! service's own, the plugin runtime's (`palaver_plugin_*`) and the Redis adapters' (`palaver_redis_*`), each
//! family with its `# HELP` and `# TYPE` once. The plugin test needs `cargo xtask plugins`; the Redis test needs
//! Redis on 127.0.0.1:6379 (or `PALAVER_TEST_REDIS_ADDR`).

mod common;

use common::{Client, http, plugins_dir, start};
use serde_json::json;
use std::collections::BTreeMap;

/// How often each family's `# TYPE` line appears.
fn type_lines(metrics: &str) -> BTreeMap<&str, usize> {
    let mut seen = BTreeMap::new();
    for line in metrics.lines() {
        if let Some(name) = line.strip_prefix("# TYPE ").and_then(|r| r.split_whitespace().next()) {
            *seen.entry(name).or_default() += 1;
        }
    }
    seen
}

/// Asserts every family is declared once, with its help text.
fn families_once(metrics: &str) {
    for (name, n) in type_lines(metrics) {
        assert_eq!(n, 1, "# TYPE {name} appears {n} times");
        assert_eq!(metrics.matches(&format!("# HELP {name} ")).count(), 1, "# HELP {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_metrics_reach_the_exposition() {
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir)]).await;
    let mut c = Client::connect(node.addr()).await;
    c.signup("counted").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "fine" })).await["code"], 202);

    let (status, metrics) = http(node.addr(), "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    let types = type_lines(&metrics);
    let exported = common::exported_names(&metrics);
    for name in [
        "palaver_plugin_info",
        "palaver_plugin_calls_total",
        "palaver_plugin_faults_total",
        "palaver_plugin_verdicts_total",
        "palaver_plugin_rejects_total",
        "palaver_plugin_skipped_total",
        "palaver_plugin_fuel_consumed_total",
        "palaver_plugin_call_duration_seconds_bucket",
        "palaver_plugin_breaker_open",
        "palaver_plugin_breaker_trips_total",
        "palaver_plugin_instantiations_total",
        "palaver_plugin_loads_total",
        "palaver_plugin_load_refusals_total",
        "palaver_plugin_effect_errors_total",
    ] {
        assert!(exported.contains(name), "{name} missing from /metrics:\n{metrics}");
    }
    assert!(
        metrics.contains("palaver_plugin_calls_total{plugin=\"moderation\",hook=\"before-publish\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("palaver_sessions 1"), "the service's own metrics are still there");
    assert!(!types.keys().any(|n| n.starts_with("palaver_redis_")), "no Redis, no Redis counters");
    families_once(&metrics);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_and_bus_counters_reach_the_exposition() {
    let redis = std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let tag = format!("pt_metrics_{:08x}", rand::random::<u32>());
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[("PALAVER_STORE_CONFIG__REDIS", &redis_cfg)]).await;
    let mut c = Client::connect(node.addr()).await;
    c.signup("counted").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "over redis" })).await["code"], 202);

    let (status, metrics) = http(node.addr(), "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    let types = type_lines(&metrics);
    let exported = common::exported_names(&metrics);
    for name in [
        "palaver_redis_commands_total",
        "palaver_redis_command_failures_total",
        "palaver_redis_cache_hits_total",
        "palaver_redis_fallbacks_total",
        "palaver_redis_hot_hits_total",
        "palaver_redis_presence_unknown_total",
        "palaver_redis_bus_published_total",
        "palaver_redis_bus_publish_commands_total",
        "palaver_redis_bus_dropped_full_total",
        "palaver_redis_bus_received_total",
        "palaver_redis_bus_loopback_dropped_total",
        "palaver_redis_bus_duplicate_dropped_total",
        "palaver_redis_bus_cross_tenant_dropped_total",
        "palaver_redis_bus_reconnects_total",
        "palaver_redis_invalidations_total",
        "palaver_redis_degraded",
        "palaver_redis_command_duration_seconds_bucket",
    ] {
        assert!(exported.contains(name), "{name} missing from /metrics:\n{metrics}");
    }
    let timed = common::sample(&metrics, "palaver_redis_command_duration_seconds_count").unwrap_or(0.0);
    assert!(timed > 0.0, "Redis commands were timed:\n{metrics}");
    assert_eq!(common::sample(&metrics, "palaver_redis_degraded"), Some(0.0), "Redis answered");
    let commands: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("palaver_redis_commands_total ")?.parse().ok())
        .expect("a commands sample");
    assert!(commands > 0, "signing up and publishing sent Redis commands");
    assert!(!types.keys().any(|n| n.starts_with("palaver_plugin_")), "no plugins, no plugin counters");
    families_once(&metrics);
    node.shutdown().await;

    common::drop_redis_keys(&redis, &tag).await;
}
