//! The figures `business` compares: one rule call made through the plugin runtime in this process with
//! nothing else running (the isolated figure), and the server's own median of the same call under load, read
//! from the buckets of `palaver_business_rule_seconds`. Their difference is what the server adds per call.
//!
//! The isolated call is timed twice: back to back, with every cache warm, and after writing through a buffer
//! larger than the machine's caches before each call. A server call meets caches its other work (storage,
//! HTTP, fanout), and on a shared virtual machine its neighbours, have filled in between, so the second figure
//! tells how much of the server's median is the caches rather than the server's own steps.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use palaver_api::Facts;
use palaver_api::facts::FriendRequestFacts;
use palaver_core::{TenantId, UserId};
use palaver_plugin_runtime::{
    CommandContext, CommandOutcome, HostServices, PluginHooks, PluginRegistry, RuntimeConfig,
};
use serde_json::json;

/// The histogram the server times each rule call in.
const RULE_HISTOGRAM: &str = "palaver_business_rule_seconds";

/// Isolated calls timed warm, after a tenth as many to warm up; a tenth as many are timed cold.
const CALLS: usize = 20_000;

/// Bytes written between two cold calls: more than this machine's L2 and L3 caches together.
const EVICT_BYTES: usize = 64 << 20;

/// Per-call times of the isolated figure, in microseconds.
pub(crate) struct Isolated {
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) calls: usize,
    /// The median with the caches emptied before each call.
    pub(crate) cold_p50_us: f64,
    pub(crate) cold_calls: usize,
}

/// The median and 99th percentile of `took`, in microseconds.
fn percentiles(mut took: Vec<f64>) -> (f64, f64) {
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// Loads the plugins of `dir` as the server does (the runtime's defaults, every manifest in the directory) and
/// times `friend.request.create` with the arguments and facts the server sends for a bench request, on the
/// plugin the server would ask: the first by priority that handles it.
pub(crate) async fn isolated(dir: &Path) -> Result<Isolated> {
    let registry = Arc::new(
        PluginRegistry::new(RuntimeConfig::default().with_node("bench"), HostServices::in_memory())
            .context("starting the plugin runtime")?,
    );
    let report = {
        let (registry, dir) = (registry.clone(), dir.to_owned());
        tokio::task::spawn_blocking(move || registry.load_dir(&dir)).await?
    };
    if !report.refused.is_empty() {
        bail!("plugins in {} were refused: {:?}", dir.display(), report.refused);
    }
    let hooks = PluginHooks::new(registry);
    let (me, to) = (UserId(0x0102_0304_0506_0708), UserId(0x0807_0605_0403_0201));
    let facts = FriendRequestFacts {
        to: to.to_string(),
        friends: false,
        i_blocked: false,
        blocked_me: false,
        pending_out: None,
        pending_in: None,
        sent_today: 3,
        message_chars: 5,
    };
    // Written as the server writes it (`Facts::rule_input`), and passed as text as the server's rules adapter does.
    let input = Facts::FriendRequestCreate(facts).rule_input(&json!({ "to": to.to_string(), "message": "bench" }));
    let ctx = CommandContext::new(TenantId(1), me);
    let call = || hooks.run_command_text(&ctx, "friend.request.create", &input);
    match call().await {
        Ok(CommandOutcome::Ok(_)) => {}
        other => bail!("the isolated friend request was not allowed: {other:?}"),
    }
    for _ in 0..CALLS / 10 {
        call().await?;
    }
    let mut took = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        std::hint::black_box(call().await?);
        took.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (p50_us, p99_us) = percentiles(took);
    let mut evict = vec![0u8; EVICT_BYTES];
    let mut cold = Vec::with_capacity(CALLS / 10);
    for i in 0..CALLS / 10 {
        // One write per cache line.
        for b in evict.iter_mut().step_by(64) {
            *b = b.wrapping_add(i as u8);
        }
        std::hint::black_box(&evict);
        let t = Instant::now();
        std::hint::black_box(call().await?);
        cold.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (cold_p50_us, _) = percentiles(cold);
    Ok(Isolated { p50_us, p99_us, calls: CALLS, cold_p50_us, cold_calls: CALLS / 10 })
}

/// The median of the server's rule calls between two scrapes, in microseconds, interpolated within its bucket
/// (the buckets are 2 µs wide up to 40 µs), and how many calls it covers.
pub(crate) fn server_median(before: &HashMap<String, f64>, after: &HashMap<String, f64>) -> Option<(f64, f64)> {
    let prefix = format!("{RULE_HISTOGRAM}_bucket{{le=\"");
    let mut buckets: Vec<(f64, f64)> = after
        .iter()
        .filter_map(|(k, v)| {
            let le = k.strip_prefix(&prefix)?.strip_suffix("\"}")?;
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            Some((le, v - before.get(k).copied().unwrap_or(0.0)))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let half = total / 2.0;
    let (mut low, mut below) = (0.0, 0.0);
    for (le, count) in buckets {
        if count >= half {
            if le.is_infinite() {
                return Some((low * 1e6, total));
            }
            let share = if count > below { (half - below) / (count - below) } else { 0.0 };
            return Some(((low + share * (le - low)) * 1e6, total));
        }
        (low, below) = (le, count);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(pairs: &[(&str, f64)]) -> HashMap<String, f64> {
        pairs.iter().map(|(le, v)| (format!("{RULE_HISTOGRAM}_bucket{{le=\"{le}\"}}"), *v)).collect()
    }

    #[test]
    fn the_median_is_interpolated_within_its_bucket_and_counts_only_the_delta() {
        let before = scrape(&[("0.000002", 100.0), ("0.000004", 100.0), ("0.000006", 100.0), ("+Inf", 100.0)]);
        // 100 new calls: 20 under 4 µs, 60 more under 6 µs, 20 slower: the 50th is halfway into (4, 6].
        let after = scrape(&[("0.000002", 100.0), ("0.000004", 120.0), ("0.000006", 180.0), ("+Inf", 200.0)]);
        let (p50, n) = server_median(&before, &after).expect("a median");
        assert_eq!(n, 100.0);
        assert!((p50 - 5.0).abs() < 1e-9, "{p50}");
        assert_eq!(server_median(&after, &after), None);
    }
}
