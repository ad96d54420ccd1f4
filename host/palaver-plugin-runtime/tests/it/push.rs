//! `before-push` (world `push-filter`, since 0.1.1): rewrites within the payload's bounds, drops and delays reach
//! the caller; a trap, the deadline or a rewrite of a locating field keeps the push unchanged (fail-open) and is
//! counted; and components built against 0.1.0 (a publish filter) and 0.1.1 (a push filter) still load on the
//! 0.1.3 host.

use crate::common::{ACTOR, artifact, as_built_against, env};
use palaver_core::ports::{PublishVerdict, PushContext, PushDecision, PushHook, PushMessage, PushTask};
use palaver_core::{TenantId, TopicKind, UserId};
use palaver_plugin_runtime::{FailurePolicy, FaultKind, Hook, RegistryError};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const RECIPIENT: UserId = UserId(77);

fn task(preview: &str) -> PushTask {
    PushTask {
        tenant: TenantId(1),
        topic: "grpTestTopic".to_owned(),
        seq: 5,
        from: ACTOR,
        ts: 1_000,
        what: "msg".to_owned(),
        mime: None,
        webrtc: None,
        preview: Some(preview.to_owned()),
        attached: Vec::new(),
        sender_device: None,
        head: None,
        mentions: vec![RECIPIENT],
        to: None,
    }
}

fn message() -> PushMessage {
    let data: BTreeMap<String, String> =
        [("type", "group_message"), ("topic", "grpTestTopic"), ("seq", "5"), ("content", "hello")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    PushMessage { data, silent: false, body: "hello".to_owned() }
}

async fn decide(e: &crate::common::Env, preview: &str) -> PushDecision {
    let (task, msg) = (task(preview), message());
    let ctx = PushContext {
        task: &task,
        recipient: RECIPIENT,
        kind: TopicKind::Group,
        platforms: vec!["android".to_owned()],
        message: &msg,
    };
    e.hooks.before_push(&ctx).await
}

fn push_faults(e: &crate::common::Env, kind: FaultKind) -> u64 {
    e.info("push-fault").before_push.faults_by_kind.get(&kind).copied().unwrap_or(0)
}

#[tokio::test]
async fn rewrites_drops_and_delays_reach_the_worker() {
    let e = env();
    assert!(!e.hooks.filters(TenantId(1)), "no filter loaded: the worker makes no call");
    e.load("push-fault-1.0.0");
    assert!(e.hooks.filters(TenantId(1)));
    let PushDecision::Rewrite(m) = decide(&e, "hi").await else { panic!("expected a rewrite") };
    assert_eq!(m.body, "filtered: hi");
    assert_eq!(m.data.get("filtered").map(String::as_str), Some("yes"));
    assert_eq!(m.data.get("topic").map(String::as_str), Some("grpTestTopic"), "locating fields stay");
    assert_eq!(decide(&e, "drop").await, PushDecision::Drop { reason: "push-fault: asked to".to_owned() });
    assert_eq!(decide(&e, "delay").await, PushDecision::Delay { ms: 50, rewrite: None });
    assert_eq!(e.info("push-fault").before_push.calls, 3);
    e.registry.set_enabled(TenantId(1), "push-fault", Some(false)).unwrap();
    assert!(!e.hooks.filters(TenantId(1)), "a tenant that disabled it gets no call");
}

#[tokio::test]
async fn a_trap_or_a_bad_rewrite_keeps_the_push_and_is_counted() {
    let e = env();
    e.load("push-fault-1.0.0");
    assert_eq!(decide(&e, "boom").await, PushDecision::Keep, "before-push fails open");
    assert_eq!(push_faults(&e, FaultKind::Trap), 1);
    // Its manifest does not grant `log`, so its component does not import it and the SDK cannot report the panic.
    let fault = e.registry.last_fault("push-fault").expect("the fault is kept");
    assert!(fault.contains("before-push: trap:") && !fault.contains("boom requested"), "{fault}");
    assert_eq!(decide(&e, "relocate").await, PushDecision::Keep, "a rewrite of `topic` is refused");
    assert_eq!(push_faults(&e, FaultKind::InvalidOutput), 1);
    // The next call gets a fresh instance.
    assert!(matches!(decide(&e, "ok").await, PushDecision::Rewrite(_)));
}

#[tokio::test]
async fn the_deadline_stops_a_filter_that_never_returns() {
    let e = env();
    e.load("push-fault-1.0.0");
    let started = Instant::now();
    assert_eq!(decide(&e, "spin").await, PushDecision::Keep);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stopped by the 30 ms deadline, took {took:?}");
    assert_eq!(push_faults(&e, FaultKind::Deadline), 1);
}

#[tokio::test]
async fn before_push_never_fails_closed() {
    let e = env();
    e.load("push-fault-1.0.0");
    let refused =
        e.registry.set_tenant_failure_policy(TenantId(1), "push-fault", Hook::BeforePush, Some(FailurePolicy::Closed));
    assert!(matches!(refused, Err(RegistryError::PushFailsOpen(_))), "{refused:?}");
    let text =
        "name = \"p\"\nversion = \"1.0.0\"\nworld = \"push-filter\"\n[hooks.before-push]\nfailure = \"closed\"\n";
    assert!(palaver_plugin_runtime::Manifest::parse(text).is_err());
}

#[tokio::test]
async fn a_component_built_against_0_1_0_still_loads_and_runs() {
    let e = env();
    let (stem, name) = ("moderation-0.1.0", "moderation");
    let (mut m, wasm) = artifact(stem);
    m.sha256 = None;
    e.registry.load_bytes(m, &as_built_against(&wasm, "0.1.0")).expect("a 0.1.0 component loads");
    assert!(matches!(e.publish("this is forbidden").await, PublishVerdict::Reject { code: 422, .. }));
    assert_eq!(e.publish("fine").await, PublishVerdict::Allow);
    assert_eq!(e.info(name).before_publish.faults, 0);
}

#[tokio::test]
async fn a_push_filter_built_against_0_1_1_still_loads_and_runs() {
    let e = env();
    let (mut m, wasm) = artifact("push-fault-1.0.0");
    m.sha256 = None;
    e.registry.load_bytes(m, &as_built_against(&wasm, "0.1.1")).expect("a 0.1.1 component loads");
    assert_eq!(decide(&e, "drop").await, PushDecision::Drop { reason: "push-fault: asked to".to_owned() });
    assert_eq!(e.info("push-fault").before_push.faults, 0);
}
