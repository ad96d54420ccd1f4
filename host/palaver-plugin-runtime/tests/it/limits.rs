//! Calls that fail: traps, an infinite loop stopped by the deadline or by fuel, a memory bomb, oversized output
//! and a host-call loop, each stopped at its limit with the instance discarded, the fault counted and the message
//! refused (fail-closed, the default); side effects of a failed call discarded; fail-open and fail-closed
//! policies; the circuit breaker; commit conflicts.

use crate::common::{ACTOR, LosesFirst, config, env, env_with};
use palaver_core::TenantId;
use palaver_core::ports::PublishVerdict;
use palaver_plugin_runtime::{
    BreakerConfig, CommandContext, CommandOutcome, Expect, FailurePolicy, FaultKind, Fixture, Hook, KvError, KvOp,
    KvQuota, KvScope, KvUsage, PluginKv, PluginState,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The fail-closed answer of a filter that faulted or was skipped.
fn unavailable(v: &PublishVerdict) -> bool {
    matches!(v, PublishVerdict::Reject { code: 503, reason } if reason.contains("unavailable"))
}

fn faults(e: &crate::common::Env, name: &str, kind: FaultKind) -> u64 {
    e.info(name).before_publish.faults_by_kind.get(&kind).copied().unwrap_or(0)
}

#[tokio::test]
async fn a_trap_discards_the_instance_and_its_effects_and_fails_closed() {
    let e = env();
    e.load("trap-1.0.0");
    assert!(unavailable(&e.publish("boom").await), "before-publish fails closed by default");
    assert_eq!(faults(&e, "trap", FaultKind::Trap), 1);
    assert!(e.keys("trap").is_empty(), "the trapped call's key-value write was discarded");
    assert!(e.effects.events().is_empty() && e.effects.notifications().is_empty(), "and its event and notification");
    // The next call gets a fresh instance and its effects apply.
    assert_eq!(e.publish("fine").await, PublishVerdict::Allow);
    assert_eq!(e.keys("trap"), vec![("last".to_owned(), b"fine".to_vec())]);
    assert_eq!(e.effects.events().len(), 1);
    assert_eq!(e.effects.notifications().len(), 1);
    assert_eq!(e.effects.notifications()[0].1.user, ACTOR);
    let info = e.info("trap");
    assert_eq!((info.calls, info.faults, info.state), (2, 1, PluginState::Active));
}

/// A panic traps (the guest is built with `panic = "abort"`), which by itself shows the host only a backtrace. The
/// trap plugin grants `log`, so the SDK's panic hook reports the message: the fault quotes it (the registry's
/// `last_fault` and the fault's log line), and a golden fixture that panics refuses the version with it in
/// `last_error`.
#[tokio::test]
async fn a_panic_message_reaches_the_fault_and_the_load_refusal() {
    let e = env();
    e.load("trap-1.0.0");
    assert_eq!(e.registry.last_fault("trap"), None);
    assert!(unavailable(&e.publish("boom").await));
    let fault = e.registry.last_fault("trap").expect("the fault is kept");
    assert!(fault.starts_with("1.0.0 before-publish: trap: "), "{fault}");
    assert!(
        fault.contains("panicked at") && fault.contains("src/lib.rs") && fault.contains("boom requested"),
        "{fault}"
    );
    let ctx = CommandContext::new(TenantId(1), ACTOR);
    e.hooks.run_command(&ctx, "trap.boom", &json!({})).await.unwrap();
    let fault = e.registry.last_fault("trap").unwrap();
    assert!(fault.contains("on-command: trap: ") && fault.contains("boom requested"), "{fault}");

    let refused = e.load_edited("trap-1.0.0", |m| {
        m.version = "1.0.1".to_owned();
        m.fixtures.push(Fixture {
            content: Some(json!("boom")),
            ..Fixture::new("boom is fine", Hook::BeforePublish, Expect::Allow)
        });
    });
    assert!(refused.is_err());
    let last_error = e.info("trap").last_error.expect("the refusal is listed");
    assert!(last_error.contains("boom is fine") && last_error.contains("boom requested"), "{last_error}");
}

#[tokio::test]
async fn commands_fail_closed_by_default_and_discard_their_effects() {
    let e = env();
    e.load("trap-1.0.0");
    let ctx = CommandContext::new(TenantId(1), ACTOR);
    let out = e.hooks.run_command(&ctx, "trap.boom", &json!({})).await.unwrap();
    assert!(
        matches!(out, CommandOutcome::Rejected { code: 503, ref reason_code, .. } if reason_code == "PLUGIN_UNAVAILABLE")
    );
    assert!(e.keys("trap").is_empty());
    let ok = e.hooks.run_command(&ctx, "trap.run", &json!({})).await.unwrap();
    assert_eq!(ok, CommandOutcome::Ok(json!({ "done": "trap.run" })));
    assert_eq!(e.keys("trap"), vec![("last".to_owned(), b"trap.run".to_vec())]);
}

#[tokio::test]
async fn failure_policies_are_configurable_per_plugin_and_hook() {
    let e = env();
    e.load("trap-1.0.0");
    e.registry.set_failure_policy("trap", Hook::BeforePublish, Some(FailurePolicy::Closed)).unwrap();
    let v = e.publish("boom").await;
    assert!(matches!(v, PublishVerdict::Reject { code: 503, .. }), "fail-closed refuses: {v:?}");
    e.registry.set_failure_policy("trap", Hook::OnCommand, Some(FailurePolicy::Open)).unwrap();
    let out = e.hooks.run_command(&CommandContext::new(TenantId(1), ACTOR), "trap.boom", &json!({})).await.unwrap();
    assert_eq!(out, CommandOutcome::Ok(json!(null)), "fail-open answers null");
    // The manifest can say the same.
    let e = env();
    let loaded = e.load_edited("trap-1.0.0", |m| {
        m.hooks.before_publish =
            Some(palaver_plugin_runtime::HookConfig { failure: Some(FailurePolicy::Closed), commands: vec![] });
    });
    loaded.unwrap();
    assert!(matches!(e.publish("boom").await, PublishVerdict::Reject { code: 503, .. }));
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_by_the_deadline() {
    let e = env();
    e.load("spin-1.0.0");
    let started = Instant::now();
    let verdict = e.publish("spin").await;
    let took = started.elapsed();
    assert!(unavailable(&verdict));
    assert_eq!(faults(&e, "spin", FaultKind::Deadline), 1);
    assert!(took < Duration::from_secs(2), "a 30 ms deadline took {took:?}");
    assert!(took >= Duration::from_millis(25), "stopped before its deadline: {took:?}");
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_by_fuel_when_the_budget_is_smaller() {
    let e = env();
    e.load_edited("spin-1.0.0", |m| {
        m.limits.fuel = Some(2_000_000);
        m.limits.deadline_ms = Some(10_000);
    })
    .unwrap();
    assert!(unavailable(&e.publish("spin").await));
    assert_eq!(faults(&e, "spin", FaultKind::Fuel), 1);
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_by_the_cap_and_the_host_carries_on() {
    let e = env();
    e.load("memory-bomb-1.0.0");
    e.load("moderation-0.1.0");
    // Moderation runs first (priority 10) and allows; the bomb (priority 100) is stopped and fails closed.
    assert!(unavailable(&e.publish("boom").await));
    assert!(unavailable(&e.publish("again").await));
    assert_eq!(faults(&e, "memory-bomb", FaultKind::Memory), 2);
    let v = e.publish("forbidden").await;
    assert!(matches!(v, PublishVerdict::Reject { code: 422, .. }), "other plugins are unharmed: {v:?}");
}

#[tokio::test]
async fn oversized_output_is_refused() {
    let e = env();
    e.load("oversized-1.0.0");
    assert!(unavailable(&e.publish("small").await), "the megabyte rewrite is not applied");
    assert_eq!(faults(&e, "oversized", FaultKind::OutputSize), 1);
    // With a cap above the output the same component's rewrite goes through.
    let e = env();
    e.load_edited("oversized-1.0.0", |m| m.limits.max_output_bytes = Some(2 << 20)).unwrap();
    assert!(matches!(e.publish("small").await, PublishVerdict::Rewrite { .. }));
}

#[tokio::test]
async fn a_host_call_loop_is_stopped_by_the_cap() {
    let e = env();
    e.load("host-loop-1.0.0");
    let started = Instant::now();
    assert!(unavailable(&e.publish("loop").await));
    assert_eq!(faults(&e, "host-loop", FaultKind::HostCalls), 1);
    assert!(started.elapsed() < Duration::from_secs(1), "stopped by the cap, not the 2 s deadline");
}

#[tokio::test]
async fn the_breaker_opens_after_repeated_faults_and_closes_after_a_good_trial() {
    let cfg = palaver_plugin_runtime::RuntimeConfig {
        breaker: BreakerConfig {
            failure_threshold: 3,
            cool_down: Duration::from_millis(200),
            ..BreakerConfig::default()
        },
        ..config()
    };
    let e = env_with(cfg, |s| s);
    e.load("trap-1.0.0");
    for _ in 0..3 {
        e.publish("boom").await;
    }
    let info = e.info("trap");
    assert_eq!((info.state, info.breaker, info.faults), (PluginState::BreakerOpen, "open", 3));
    // While open the plugin is skipped: its policy answers and nothing it would write is written.
    assert!(unavailable(&e.publish("fine").await));
    assert_eq!(e.info("trap").before_publish.skipped, 1);
    assert!(e.keys("trap").is_empty());
    // After the cool-down one trial runs; a failing trial opens the breaker again.
    tokio::time::sleep(Duration::from_millis(250)).await;
    e.publish("boom").await;
    assert_eq!((e.info("trap").faults, e.info("trap").breaker), (4, "open"));
    // A good trial closes it.
    tokio::time::sleep(Duration::from_millis(250)).await;
    e.publish("fine").await;
    let info = e.info("trap");
    assert_eq!((info.state, info.breaker), (PluginState::Active, "closed"));
    assert_eq!(e.keys("trap"), vec![("last".to_owned(), b"fine".to_vec())]);
    assert!(e.registry.render_metrics().contains("palaver_plugin_breaker_trips_total{plugin=\"trap\"} 2"));
}

/// A key-value store whose commits always lose a race; the memory store's behaviour once the first
/// `losses` commits are spent.
struct Conflicting;

#[tokio::test]
async fn a_call_that_loses_a_kv_race_runs_again_and_commits_once() {
    let e = env_with(config(), |s| s.with_kv(Arc::new(LosesFirst::new(2))));
    e.load("hello-0.1.0");
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    let (cmd, args) = (CommandContext::new(TenantId(1), ACTOR), json!({ "name": "Ann" }));
    let out = e.hooks.run_command(&cmd, "hello.greet", &args).await.unwrap();
    assert_eq!(out, CommandOutcome::Ok(json!({ "greeting": "Hello, Ann!", "count": 1 })));
    assert_eq!(e.effects.events().len(), 1, "only the run that committed sends its event");
    assert_eq!(e.info("hello").on_command.faults_by_kind.get(&FaultKind::Conflict), None);
    assert!(e.registry.render_metrics().contains("palaver_plugin_kv_retries_total{plugin=\"hello\"} 2"));
}

#[async_trait::async_trait]
impl PluginKv for Conflicting {
    async fn get(&self, _: KvScope<'_>, _: &str) -> Result<Option<Vec<u8>>, KvError> {
        Ok(None)
    }

    async fn usage(&self, _: KvScope<'_>) -> Result<KvUsage, KvError> {
        Ok(KvUsage::default())
    }

    async fn commit(&self, _: KvScope<'_>, ops: &[KvOp], _: &KvQuota) -> Result<(), KvError> {
        if ops.is_empty() { Ok(()) } else { Err(KvError::Conflict("greetings".to_owned())) }
    }
}

#[tokio::test]
async fn a_commit_conflict_fails_the_call_and_drops_its_events() {
    let e = env_with(config(), |s| s.with_kv(Arc::new(Conflicting)));
    e.load("hello-0.1.0");
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    let (cmd, args) = (CommandContext::new(TenantId(1), ACTOR), json!({ "name": "Ann" }));
    let out = e.hooks.run_command(&cmd, "hello.greet", &args).await.unwrap();
    assert!(matches!(out, CommandOutcome::Rejected { code: 503, .. }), "{out:?}");
    assert!(e.effects.events().is_empty(), "the event of a call that did not commit is not sent");
    assert_eq!(e.info("hello").on_command.faults_by_kind.get(&FaultKind::Conflict), Some(&1));
}
