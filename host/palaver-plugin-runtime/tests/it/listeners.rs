//! The listeners (world `listener`, since 0.1.3): the listen-echo plugin takes stored messages and account
//! changes with their attempt; an `err`, a trap, the deadline or an open breaker comes back as a failure named by
//! the plugin (listeners always fail closed), an `err` counting towards the breaker and a skip marked as one;
//! `only` limits a delivery to the listeners named; a tenant that disabled a listener has none, and neither has a
//! hook the manifest does not name; a canary's tenants run the canary.

use crate::common::{ACTOR, artifact, config, env, env_with};
use palaver_core::ports::{AccountChange, EventHook, ListenerFailure, ListenerKind, PluginEvent};
use palaver_core::{TenantId, UserId};
use palaver_plugin_runtime::{
    BreakerConfig, FailurePolicy, FaultKind, Hook, KvScope, RegistryError, ReleaseRef, RolloutTarget, RuntimeConfig,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const BOB: UserId = UserId(0x0a0b_0c0d);

fn message(tenant: TenantId, seq: i64, text: &str) -> PluginEvent {
    PluginEvent::Published {
        tenant,
        topic: "grpTestTopic".to_owned(),
        seq,
        ts: 1_000,
        from: ACTOR,
        content: json!({ "txt": text }),
        head: Some(json!({ "mime": "text/x-drafty" }).as_object().cloned().unwrap_or_default()),
    }
}

fn account(tenant: TenantId, change: AccountChange, tags: &[&str]) -> PluginEvent {
    PluginEvent::Account {
        tenant,
        id: "e1".to_owned(),
        user: BOB,
        actor: Some(ACTOR),
        change,
        ts: 2_000,
        public: Some(json!({ "fn": "Bob" })),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    }
}

fn failure(plugin: &str, reason: &str) -> ListenerFailure {
    ListenerFailure { plugin: plugin.to_owned(), reason: reason.to_owned(), skipped: false }
}

/// The value listen-echo (or a copy under another name) stored under `key` for `tenant`.
fn record(e: &crate::common::Env, tenant: TenantId, plugin: &str, key: &str) -> Option<String> {
    e.kv.snapshot(KvScope { tenant, plugin })
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| String::from_utf8(v).expect("text"))
}

fn faults(e: &crate::common::Env, kind: FaultKind) -> u64 {
    e.info("listen-echo").after_publish.faults_by_kind.get(&kind).copied().unwrap_or(0)
}

#[tokio::test]
async fn messages_and_account_changes_reach_the_listener_with_their_attempt() {
    let e = env();
    assert!(e.hooks.listeners(T, ListenerKind::Published).is_empty(), "no listener: the service queues nothing");
    e.load("listen-echo-1.0.0");
    assert_eq!(e.hooks.listeners(T, ListenerKind::Published), vec!["listen-echo".to_owned()]);
    assert_eq!(e.hooks.listeners(T, ListenerKind::Account), vec!["listen-echo".to_owned()]);
    assert!(e.hooks.listens(T, ListenerKind::Published) && e.hooks.listens(T, ListenerKind::Account));
    assert_eq!(e.hooks.deliver(&message(T, 5, "hello"), None, 1).await, vec![]);
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:5").as_deref(), Some("v1 attempt 1 hello"));
    assert_eq!(e.hooks.deliver(&account(T, AccountChange::Updated, &["x"]), None, 2).await, vec![]);
    let key = format!("acc:{BOB}");
    assert_eq!(record(&e, T, "listen-echo", &key).as_deref(), Some("v1 updated attempt 2"));
    let info = e.info("listen-echo");
    assert_eq!((info.after_publish.calls, info.on_account.calls, info.faults), (1, 1, 0));
    e.registry.set_enabled(T, "listen-echo", Some(false)).unwrap();
    assert!(e.hooks.listeners(T, ListenerKind::Published).is_empty(), "a tenant that disabled it has none");
    assert!(!e.hooks.listens(T, ListenerKind::Published) && !e.hooks.listens(T, ListenerKind::Account));
    assert_eq!(e.hooks.deliver(&message(T, 6, "hello"), None, 1).await, vec![]);
    assert_eq!(e.info("listen-echo").after_publish.calls, 1, "and no call is made");
}

#[tokio::test]
async fn an_err_is_a_failure_named_by_its_plugin_not_a_fault() {
    let e = env();
    e.load("listen-echo-1.0.0");
    assert_eq!(
        e.hooks.deliver(&message(T, 7, "please fail"), None, 3).await,
        vec![failure("listen-echo", "asked to fail (attempt 3)")]
    );
    assert_eq!(
        e.hooks.deliver(&account(T, AccountChange::Created, &["fail"]), None, 1).await,
        vec![failure("listen-echo", "asked to fail (attempt 1)")]
    );
    let info = e.info("listen-echo");
    assert_eq!((info.faults, e.registry.breaker("listen-echo", T)), (0, Some("closed")), "an answer, not a fault");
    let metrics = e.registry.render_metrics();
    let line = "palaver_plugin_verdicts_total{plugin=\"listen-echo\",hook=\"after-publish\",verdict=\"err\"} 1";
    assert!(metrics.contains(line), "{metrics}");
}

#[tokio::test]
async fn a_trap_or_the_deadline_is_a_failure_and_its_effects_are_dropped() {
    let e = env();
    e.load("listen-echo-1.0.0");
    assert_eq!(
        e.hooks.deliver(&message(T, 8, "boom"), None, 1).await,
        vec![failure("listen-echo", "plugin listen-echo failed: trap")]
    );
    assert_eq!(faults(&e, FaultKind::Trap), 1);
    let started = Instant::now();
    assert_eq!(
        e.hooks.deliver(&message(T, 9, "spin"), None, 1).await,
        vec![failure("listen-echo", "plugin listen-echo failed: deadline")]
    );
    assert!(started.elapsed() < Duration::from_secs(2), "stopped by the 30 ms deadline");
    assert_eq!(faults(&e, FaultKind::Deadline), 1);
    assert!(e.keys("listen-echo").is_empty(), "nothing of a faulted call is applied");
    // The next delivery gets a fresh instance.
    assert_eq!(e.hooks.deliver(&message(T, 8, "fine"), None, 2).await, vec![]);
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:8").as_deref(), Some("v1 attempt 2 fine"));
}

#[tokio::test]
async fn an_open_breaker_is_a_failure_to_retry() {
    let breaker =
        BreakerConfig { failure_threshold: 1, cool_down: Duration::from_secs(60), ..BreakerConfig::default() };
    let e = env_with(RuntimeConfig { breaker, ..config() }, |s| s);
    e.load("listen-echo-1.0.0");
    assert_eq!(e.hooks.deliver(&message(T, 1, "boom"), None, 1).await.len(), 1);
    let skipped = ListenerFailure {
        skipped: true,
        ..failure("listen-echo", "plugin listen-echo failed: its circuit breaker is open")
    };
    assert_eq!(e.hooks.deliver(&message(T, 2, "hello"), None, 1).await, vec![skipped]);
    assert_eq!(e.info("listen-echo").after_publish.skipped, 1);
}

/// A receiver that is down makes every delivery answer `err`: those count towards the tenant's breaker, so it
/// opens and the worker dead-letters the events at once instead of trying each against the plugin; they stay
/// answers, not faults.
#[tokio::test]
async fn an_err_counts_towards_the_breaker_but_is_no_fault() {
    let breaker =
        BreakerConfig { failure_threshold: 2, cool_down: Duration::from_secs(60), ..BreakerConfig::default() };
    let e = env_with(RuntimeConfig { breaker, ..config() }, |s| s);
    e.load("listen-echo-1.0.0");
    assert_eq!(
        e.hooks.deliver(&message(T, 1, "fail"), None, 1).await,
        vec![failure("listen-echo", "asked to fail (attempt 1)")]
    );
    assert_eq!(e.registry.breaker("listen-echo", T), Some("closed"), "one err is below the threshold");
    let failed = e.hooks.deliver(&account(T, AccountChange::Created, &["fail"]), None, 1).await;
    assert_eq!(failed, vec![failure("listen-echo", "asked to fail (attempt 1)")], "the err that trips it ran");
    assert_eq!(e.registry.breaker("listen-echo", T), Some("open"));
    let next = e.hooks.deliver(&message(T, 2, "hello"), None, 1).await;
    assert_eq!(next.len(), 1);
    assert!(next[0].skipped, "not called: {next:?}");
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:2"), None);
    let info = e.info("listen-echo");
    assert_eq!((info.faults, info.after_publish.calls, info.after_publish.skipped), (0, 1, 1));
    assert_eq!(e.registry.last_fault("listen-echo"), None, "an err is no fault");
    let metrics = e.registry.render_metrics();
    let line = "palaver_plugin_verdicts_total{plugin=\"listen-echo\",hook=\"on-account\",verdict=\"err\"} 1";
    assert!(metrics.contains(line), "{metrics}");
    // Another tenant's breaker is its own.
    assert_eq!(e.hooks.deliver(&message(TenantId(2), 3, "hello"), None, 1).await, vec![]);
}

/// A listener whose manifest names `[hooks.after-publish]` only takes messages: nobody listens for account
/// changes, so the service queues none for it, and a delivery calls nothing.
#[tokio::test]
async fn a_listener_takes_only_the_events_of_the_hooks_it_names() {
    let e = env();
    e.load_edited("listen-echo-1.0.0", |m| {
        m.hooks.on_account = None;
        m.fixtures.retain(|f| f.hook != Hook::OnAccount);
    })
    .expect("a message-only listener loads");
    assert_eq!(e.hooks.listeners(T, ListenerKind::Published), vec!["listen-echo".to_owned()]);
    assert!(e.hooks.listeners(T, ListenerKind::Account).is_empty(), "not listed for account events");
    assert!(e.hooks.listens(T, ListenerKind::Published) && !e.hooks.listens(T, ListenerKind::Account));
    assert_eq!(e.hooks.deliver(&account(T, AccountChange::Updated, &[]), None, 1).await, vec![]);
    assert_eq!(record(&e, T, "listen-echo", &format!("acc:{BOB}")), None);
    let info = e.info("listen-echo");
    assert_eq!((info.on_account.calls, info.hooks.as_slice()), (0, [Hook::AfterPublish].as_slice()));
    assert_eq!(
        e.registry.failure_policies(T, "listen-echo").unwrap(),
        vec![(Hook::AfterPublish, FailurePolicy::Closed)]
    );
    assert_eq!(e.hooks.deliver(&message(T, 1, "hi"), None, 1).await, vec![]);
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:1").as_deref(), Some("v1 attempt 1 hi"));
}

#[tokio::test]
async fn only_the_listeners_named_are_delivered_to() {
    let e = env();
    e.load("listen-echo-1.0.0");
    e.load_edited("listen-echo-1.0.0", |m| m.name = "echo-two".to_owned()).expect("a second listener");
    let mut both = e.hooks.listeners(T, ListenerKind::Published);
    both.sort();
    assert_eq!(both, vec!["echo-two".to_owned(), "listen-echo".to_owned()]);
    // Both fail; a retry goes to the one named only.
    let failed = e.hooks.deliver(&message(T, 3, "fail"), None, 1).await;
    let mut names: Vec<&str> = failed.iter().map(|f| f.plugin.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["echo-two", "listen-echo"]);
    let only = ["echo-two".to_owned()];
    assert_eq!(e.hooks.deliver(&message(T, 4, "ok"), Some(&only), 2).await, vec![]);
    assert_eq!(record(&e, T, "echo-two", "msg:grpTestTopic:4").as_deref(), Some("v1 attempt 2 ok"));
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:4"), None, "not named, not called");
    assert_eq!(e.info("listen-echo").after_publish.calls, 1);
    // A listener that is gone is nobody to deliver to, not a failure to retry for ever.
    let gone = ["unloaded".to_owned()];
    assert_eq!(e.hooks.deliver(&message(T, 5, "ok"), Some(&gone), 2).await, vec![]);
    assert_eq!(e.hooks.deliver(&message(T, 5, "ok"), Some(&[]), 2).await, vec![]);
    assert_eq!(e.info("echo-two").after_publish.calls, 2);
}

#[tokio::test]
async fn listeners_always_fail_closed() {
    let e = env();
    e.load("listen-echo-1.0.0");
    for hook in [Hook::AfterPublish, Hook::OnAccount] {
        let refused = e.registry.set_tenant_failure_policy(T, "listen-echo", hook, Some(FailurePolicy::Open));
        assert!(matches!(refused, Err(RegistryError::ListenerFailsClosed(_))), "{refused:?}");
        let refused = e.registry.set_failure_policy("listen-echo", hook, Some(FailurePolicy::Open));
        assert!(matches!(refused, Err(RegistryError::ListenerFailsClosed(_))), "{refused:?}");
    }
    let policies = e.registry.failure_policies(T, "listen-echo").unwrap();
    assert_eq!(policies, vec![(Hook::AfterPublish, FailurePolicy::Closed), (Hook::OnAccount, FailurePolicy::Closed)]);
}

#[tokio::test]
async fn a_canary_tenant_gets_the_canary_listener() {
    let e = env();
    let (mut live, c) = artifact("listen-echo-1.0.0");
    live.sha256 = None;
    let mut canary = live.clone();
    canary.version = "1.1.0".to_owned();
    canary.settings.get_mut("label").expect("the setting is declared").default = Some(json!("v2"));
    let tenants: BTreeSet<TenantId> = [TenantId(7)].into();
    e.registry
        .apply_rollout(
            "listen-echo",
            &RolloutTarget {
                live: Some(ReleaseRef { manifest: &live, component: &c }),
                canary: Some((ReleaseRef { manifest: &canary, component: &c }, tenants)),
            },
        )
        .unwrap();
    for t in [T, TenantId(7)] {
        assert_eq!(e.hooks.deliver(&message(t, 1, "hi"), None, 1).await, vec![]);
    }
    assert_eq!(record(&e, T, "listen-echo", "msg:grpTestTopic:1").as_deref(), Some("v1 attempt 1 hi"));
    assert_eq!(record(&e, TenantId(7), "listen-echo", "msg:grpTestTopic:1").as_deref(), Some("v2 attempt 1 hi"));
}
