//! Measures what the plugin platform costs: loading (compile, cache, gate), a call on a fresh instance and on a
//! warm one, the latency the moderation plugin adds to each `before-publish` (p50/p99 against no plugin), hook
//! throughput with and without it, and the cost of a hot swap and a rollback. Printed, not asserted.
//!
//! `cargo run --release -p palaver-plugin-runtime --example hook_bench` (builds the plugins first if needed).

use palaver_core::ports::{NoHooks, PublishContext, PublishHook};
use palaver_core::{TenantId, TopicKind, UserId};
use palaver_plugin_runtime::{HostServices, InstanceMode, Manifest, PluginHooks, PluginRegistry, RuntimeConfig};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: usize = 20_000;

fn ctx() -> PublishContext {
    PublishContext {
        tenant: TenantId(1),
        topic: "grpBenchTopic".to_owned(),
        kind: TopicKind::Group,
        from: UserId(0x0102_0304_0506_0708),
        session: "bench".to_owned(),
        node: "bench".to_owned(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// Per-call latencies of `n` calls of `hook` on `content`, sorted, and the calls per second they add up to.
async fn measure(hook: &dyn PublishHook, content: &Value, n: usize) -> (Vec<Duration>, f64) {
    let ctx = ctx();
    for _ in 0..n / 10 {
        hook.before_publish(&ctx, content, None).await;
    }
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(hook.before_publish(&ctx, content, None).await);
        lat.push(t.elapsed());
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    (lat, rate)
}

fn line(what: &str, lat: &[Duration], rate: f64) {
    println!(
        "{what:<44} p50 {:>8.2} µs   p99 {:>8.2} µs   {:>9.0} calls/s",
        percentile(lat, 0.5),
        percentile(lat, 0.99),
        rate
    );
}

fn registry(cache: Option<&Path>) -> Arc<PluginRegistry> {
    let mut cfg = RuntimeConfig::default().with_node("bench");
    cfg.cache_dir = cache.map(Path::to_owned);
    Arc::new(PluginRegistry::new(cfg, HostServices::in_memory()).expect("registry"))
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64() * 1e3)
}

fn main() {
    let built = xtask::ensure_plugins_built().expect("building the plugins");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    let cache = tempfile::tempdir().expect("tempdir");
    let moderation = built.join("moderation-0.1.0.toml");
    let size = std::fs::metadata(built.join("moderation-0.1.0.wasm")).map(|m| m.len()).unwrap_or(0);

    println!("== loading (moderation, {} KiB component, 10 golden fixtures)", size / 1024);
    let cold = registry(Some(cache.path()));
    let (_, ms) = timed(|| cold.load_file(&moderation).expect("load"));
    println!("{:<44} {ms:>8.1} ms", "compile + gate + fixtures, cold cache");
    let warm = registry(Some(cache.path()));
    let (_, ms) = timed(|| warm.load_file(&moderation).expect("load"));
    println!("{:<44} {ms:>8.1} ms", "same, compiled code from the disk cache");
    println!("pooling allocator: {}", if warm.pooling() { "on" } else { "unavailable (on-demand)" });

    println!("\n== one call (allow-all: the cost of the platform itself)");
    let (m, wasm) =
        (built.join("allow-all-1.0.0.toml"), std::fs::read(built.join("allow-all-1.0.0.wasm")).expect("wasm"));
    let manifest = Manifest::from_file(&m).expect("manifest");
    let ephemeral = registry(Some(cache.path()));
    ephemeral.load_bytes(manifest.clone(), &wasm).expect("load");
    let warm_allow = registry(Some(cache.path()));
    let mut w = manifest;
    w.instance.mode = InstanceMode::Warm;
    warm_allow.load_bytes(w, &wasm).expect("load");
    let msg = json!("hello everyone, see you at the meeting at ten tomorrow");
    rt.block_on(async {
        let (lat, rate) = measure(&PluginHooks::new(ephemeral.clone()), &msg, CALLS / 4).await;
        line("fresh instance per call (instantiate + call)", &lat, rate);
        let (lat, rate) = measure(&PluginHooks::new(warm_allow.clone()), &msg, CALLS).await;
        line("warm instance (call only)", &lat, rate);
    });

    println!("\n== before-publish with the moderation plugin (warm, default rules)");
    let hooks = PluginHooks::new(warm.clone());
    rt.block_on(async {
        let (base, base_rate) = measure(&NoHooks, &msg, CALLS).await;
        line("no plugin", &base, base_rate);
        let (lat, rate) = measure(&hooks, &msg, CALLS).await;
        line("moderation, allowed message", &lat, rate);
        let (rej, rej_rate) = measure(&hooks, &json!("this one is forbidden, sorry"), CALLS).await;
        line("moderation, rejected message", &rej, rej_rate);
        let drafty =
            json!({ "txt": "a longer Drafty message with formatting", "fmt": [{ "at": 2, "len": 6, "tp": "ST" }] });
        let (dr, dr_rate) = measure(&hooks, &drafty, CALLS).await;
        line("moderation, Drafty message", &dr, dr_rate);
        let added = |p| percentile(&lat, p) - percentile(&base, p);
        // A publish costs tens of microseconds end to end (store, ack, fanout), so what matters for publish
        // throughput is the time added per message; the server's bench measures the end-to-end ratio.
        println!(
            "added per message: p50 {:.2} µs, p99 {:.2} µs (target <= 10 µs at p50); {rate:.0} moderation calls/s per core",
            added(0.5),
            added(0.99)
        );
    });

    println!("\n== hot swap (ruled 1.0.0 <-> 2.0.0, warm cache: compile from cache + gate + fixtures + swap)");
    let swap = registry(Some(cache.path()));
    let (v1, v2) = (built.join("ruled-1.0.0.toml"), built.join("ruled-2.0.0.toml"));
    swap.load_file(&v1).expect("v1");
    swap.load_file(&v2).expect("v2");
    let mut loads = Vec::new();
    for i in 0..20 {
        let (_, ms) = timed(|| swap.load_file(if i % 2 == 0 { &v1 } else { &v2 }).expect("swap"));
        loads.push(Duration::from_secs_f64(ms / 1e3));
    }
    loads.sort();
    println!(
        "{:<44} p50 {:>8.2} ms   max {:>8.2} ms",
        "reload to the other version",
        percentile(&loads, 0.5) / 1e3,
        percentile(&loads, 1.0) / 1e3
    );
    let mut rollbacks = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        swap.rollback("ruled").expect("rollback");
        rollbacks.push(t.elapsed());
    }
    rollbacks.sort();
    println!(
        "{:<44} p50 {:>8.2} µs   p99 {:>8.2} µs",
        "rollback (pointer swap)",
        percentile(&rollbacks, 0.5),
        percentile(&rollbacks, 0.99)
    );
}
