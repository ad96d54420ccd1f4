//! Moderation that load cannot switch off, and plugins that cannot fill the store: a message as large as the
//! frame limit still gets a full scan, one tenant's faults open its own breaker only, a faulting filter refuses
//! (unless the manifest or the tenant chose fail-open), and the key-value quota stops a plugin at its cap with
//! the `limit` error.

use crate::common::{ACTOR, config, env_with, rejected};
use palaver_core::TenantId;
use palaver_core::ports::PublishVerdict;
use palaver_plugin_runtime::{
    BreakerConfig, CommandContext, CommandOutcome, FailurePolicy, FaultKind, Hook, KvQuota, KvScope, RuntimeConfig,
};
use serde_json::{Value, json};
use std::time::Duration;

/// The server's default frame limit (`limits.max_message_size`).
const FRAME: usize = 256 << 10;

/// A group `{pub}` frame around `content`, as a client would send it.
fn frame(content: &str) -> String {
    json!({ "pub": { "id": "123", "topic": "grpTestTopic", "noecho": true, "content": content } }).to_string()
}

#[tokio::test]
async fn a_message_just_under_the_frame_limit_is_still_moderated() {
    let e = env_with(RuntimeConfig { max_input_bytes: FRAME, ..config() }, |s| s);
    e.load("moderation-0.1.0");
    // One-letter words are the most work per byte for the word scan; the blocked word comes last.
    let tail = " forbidden";
    let mut text = "a ".repeat((FRAME - 200) / 2);
    text.push_str(tail);
    let sent = frame(&text);
    assert!(sent.len() < FRAME && sent.len() > FRAME - 256, "the frame is {} bytes", sent.len());
    let v = e.publish_as(1, Value::String(text.clone())).await;
    assert_eq!(rejected(&v), (422, "message contains a blocked word"), "the whole message was scanned");
    assert_eq!(e.info("moderation").before_publish.faults, 0, "within its budget, not failed closed");
    // The same text without the word is allowed: the scan finished, it did not just give up.
    let clean = &text[..text.len() - tail.len()];
    assert_eq!(e.publish_as(1, Value::String(clean.to_owned())).await, PublishVerdict::Allow);
}

#[tokio::test]
async fn one_tenant_tripping_the_breaker_leaves_it_closed_for_the_others() {
    let breaker =
        BreakerConfig { failure_threshold: 3, cool_down: Duration::from_secs(60), ..BreakerConfig::default() };
    let e = env_with(RuntimeConfig { breaker, ..config() }, |s| s);
    e.load("trap-1.0.0");
    for _ in 0..3 {
        e.publish_as(1, json!("boom")).await;
    }
    assert_eq!(e.registry.breaker("trap", TenantId(1)), Some("open"));
    // Tenant 1 is skipped, and its policy (closed) answers.
    assert!(matches!(e.publish_as(1, json!("fine")).await, PublishVerdict::Reject { code: 503, .. }));
    assert_eq!(e.info("trap").before_publish.skipped, 1);
    // Tenant 2's call runs: its write is there, and its breaker never opened.
    assert_eq!(e.publish_as(2, json!("fine")).await, PublishVerdict::Allow);
    assert_eq!(e.kv.snapshot(KvScope { tenant: TenantId(2), plugin: "trap" }), vec![("last".into(), b"fine".to_vec())]);
    assert_eq!(e.registry.breaker("trap", TenantId(2)), Some("closed"));
    assert_eq!(e.info("trap").before_publish.skipped, 1, "only tenant 1's call was skipped");
    let info = e.info("trap");
    assert_eq!((info.breaker, info.breakers_open), ("open", 1));
    assert!(e.registry.render_metrics().contains("palaver_plugin_breaker_open{plugin=\"trap\"} 1"));
}

#[tokio::test]
async fn a_faulting_filter_refuses_by_default_and_lets_through_where_fail_open_was_chosen() {
    let e = env_with(config(), |s| s);
    e.load("trap-1.0.0"); // its manifest names no failure policy
    let v = e.publish_as(1, json!("boom")).await;
    let (code, reason) = rejected(&v);
    assert_eq!(code, 503, "retryable");
    assert!(reason.contains("unavailable"), "{reason}");
    // A tenant that chose fail-open gets the message through; the others still refuse.
    e.registry.set_tenant_failure_policy(TenantId(1), "trap", Hook::BeforePublish, Some(FailurePolicy::Open)).unwrap();
    assert_eq!(e.publish_as(1, json!("boom")).await, PublishVerdict::Allow);
    assert!(matches!(e.publish_as(2, json!("boom")).await, PublishVerdict::Reject { code: 503, .. }));
    assert_eq!(
        e.registry.failure_policies(TenantId(1), "trap").unwrap(),
        vec![(Hook::BeforePublish, FailurePolicy::Open), (Hook::OnCommand, FailurePolicy::Closed)]
    );
    e.registry.set_tenant_failure_policy(TenantId(1), "trap", Hook::BeforePublish, None).unwrap();
    assert!(matches!(e.publish_as(1, json!("boom")).await, PublishVerdict::Reject { code: 503, .. }));
    // So does a manifest that says open.
    let e = env_with(config(), |s| s);
    e.load_edited("trap-1.0.0", |m| {
        m.hooks.before_publish =
            Some(palaver_plugin_runtime::HookConfig { failure: Some(FailurePolicy::Open), commands: vec![] });
    })
    .unwrap();
    assert_eq!(e.publish_as(1, json!("boom")).await, PublishVerdict::Allow);
}

#[tokio::test]
async fn the_moderation_plugin_fails_closed() {
    let e = env_with(config(), |s| s);
    // Its own manifest, with a budget too small for any message: every call runs out of fuel.
    e.load_edited("moderation-0.1.0", |m| {
        m.fixtures.clear();
        m.limits.fuel = Some(1_000);
        m.limits.fuel_per_kib = Some(0);
    })
    .unwrap();
    let v = e.publish("harmless").await;
    assert!(matches!(v, PublishVerdict::Reject { code: 503, .. }), "{v:?}");
    assert_eq!(e.info("moderation").before_publish.faults_by_kind.get(&FaultKind::Fuel), Some(&1));
}

#[tokio::test]
async fn the_kv_quota_stops_a_plugin_at_its_cap_with_the_limit_error() {
    // `greetings` (9 bytes) with a one-digit count fits in 10 bytes; the count 10 does not.
    let quota = KvQuota { max_keys: 100, max_bytes: 10 };
    let e = env_with(RuntimeConfig { kv_quota: quota, ..config() }, |s| s);
    e.load("hello-0.1.0");
    for t in [1, 2] {
        e.registry.set_enabled(TenantId(t), "hello", Some(true)).unwrap();
    }
    let greet = |t: u64| {
        let ctx = CommandContext::new(TenantId(t), ACTOR);
        let hooks = e.hooks.clone();
        async move { hooks.run_command(&ctx, "hello.greet", &json!({ "name": "Ann" })).await.unwrap() }
    };
    for n in 1..=9 {
        assert!(matches!(greet(1).await, CommandOutcome::Ok(ref v) if v["count"] == n));
    }
    match greet(1).await {
        CommandOutcome::Rejected { reason_code, message, .. } => {
            assert_eq!(reason_code, "KV_UNAVAILABLE", "the guest saw the kv import's error");
            assert!(message.contains("limit: key-value quota exceeded: at most 10 bytes"), "{message}");
        }
        other => panic!("the write past the quota went through: {other:?}"),
    }
    assert_eq!(e.keys("hello"), vec![("greetings".into(), b"9".to_vec())], "nothing past the quota was stored");
    // The quota is per tenant: another tenant's plugin starts from nothing.
    assert!(matches!(greet(2).await, CommandOutcome::Ok(ref v) if v["count"] == 1));
}
