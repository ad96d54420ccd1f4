//! The gates (world `gate`, since 0.1.3): the access-rules plugin admits logins by the client's network and joins
//! by the group's rules; restrictions chain in priority order (gate-fault, after it, sees the narrowed mode); a
//! restriction that adds a right or drops `J`, a malformed answer, a trap or an open breaker answers with the hook's
//! failure policy (closed by default: 503, retryable), which a tenant may open; a hook the manifest does not name
//! is never called; a canary's tenants run the canary.

use crate::common::{ACTOR, artifact, config, env, env_with};
use palaver_api::Reason;
use palaver_core::ports::{GateHook, GateVerdict, JoinContext, LoginContext};
use palaver_core::{TenantId, TopicKind};
use palaver_plugin_runtime::{
    BreakerConfig, Expect, FailurePolicy, FaultKind, Fixture, Hook, ReleaseRef, RolloutTarget, RuntimeConfig,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

const T: TenantId = TenantId(1);

fn login_from(tenant: TenantId, addr: &str, user_agent: &str) -> LoginContext {
    LoginContext {
        tenant,
        user: ACTOR,
        session: "s1".to_owned(),
        node: "test-node".to_owned(),
        scheme: "basic".to_owned(),
        remote_addr: addr.to_owned(),
        user_agent: user_agent.to_owned(),
    }
}

fn join_to(tenant: TenantId, topic: &str, want: &str, given: &str) -> JoinContext {
    let kind = if topic.starts_with("p2p") { TopicKind::P2p } else { TopicKind::Group };
    JoinContext {
        tenant,
        topic: topic.to_owned(),
        kind,
        user: ACTOR,
        session: "s1".to_owned(),
        node: "test-node".to_owned(),
        want: want.to_owned(),
        given: given.to_owned(),
    }
}

fn reject(code: u16, reason: &str) -> GateVerdict {
    GateVerdict::Reject { code, reason: reason.to_owned() }
}

fn restrict(mode: &str) -> GateVerdict {
    GateVerdict::Restrict { mode: mode.to_owned() }
}

fn faults(e: &crate::common::Env, name: &str, hook: Hook, kind: FaultKind) -> u64 {
    let info = e.info(name);
    let counts = if hook == Hook::OnLogin { info.on_login } else { info.before_subscribe };
    counts.faults_by_kind.get(&kind).copied().unwrap_or(0)
}

/// Loads access-rules and enables it for tenant 1 (it is off by default).
fn with_access_rules(e: &crate::common::Env) {
    e.load("access-rules-0.1.0");
    assert!(!e.hooks.gates_login(T) && !e.hooks.gates_join(T), "access-rules is off unless a tenant enables it");
    e.registry.set_enabled(T, "access-rules", Some(true)).unwrap();
    assert!(e.hooks.gates_login(T) && e.hooks.gates_join(T));
}

#[tokio::test]
async fn logins_pass_only_from_the_tenants_networks() {
    let e = env();
    assert!(!e.hooks.gates_login(T), "no gate loaded: the login path builds no input");
    with_access_rules(&e);
    assert_eq!(e.hooks.on_login(&login_from(T, "203.0.113.9", "")).await, GateVerdict::Allow, "no networks set");
    let cidrs = json!({ "login_allow_cidrs": ["10.0.0.0/8", "2001:db8::/32"] });
    e.registry.set_settings(T, "access-rules", Some(cidrs)).unwrap();
    assert_eq!(e.hooks.on_login(&login_from(T, "10.20.30.40", "")).await, GateVerdict::Allow);
    assert_eq!(e.hooks.on_login(&login_from(T, "2001:db8:5::1", "")).await, GateVerdict::Allow);
    assert_eq!(
        e.hooks.on_login(&login_from(T, "203.0.113.9", "")).await,
        reject(403, "logins from 203.0.113.9 are not allowed for this tenant")
    );
    assert_eq!(
        e.hooks.on_login(&login_from(T, "2001:db9::1", "")).await,
        reject(403, "logins from 2001:db9::1 are not allowed for this tenant")
    );
    let GateVerdict::Reject { code: 403, reason } = e.hooks.on_login(&login_from(T, "", "")).await else {
        panic!("an unknown address is refused")
    };
    assert!(reason.contains("unknown"), "{reason}");
    let info = e.info("access-rules");
    assert_eq!((info.on_login.calls, info.on_login.faults), (6, 0));
    let metrics = e.registry.render_metrics();
    let line = "palaver_plugin_rejects_total{plugin=\"access-rules\",hook=\"on-login\"} 3";
    assert!(metrics.contains(line), "{metrics}");
    assert!(!e.hooks.gates_login(TenantId(2)), "a tenant that did not enable it is not gated");
    assert_eq!(e.hooks.on_login(&login_from(TenantId(2), "203.0.113.9", "")).await, GateVerdict::Allow);
}

#[tokio::test]
async fn invite_only_groups_refuse_joins_and_read_only_groups_restrict_them() {
    let e = env();
    with_access_rules(&e);
    let rules = json!({ "invite_only_groups": ["grpClosed"], "read_only_joins": ["grpNews"] });
    e.registry.set_settings(T, "access-rules", Some(rules)).unwrap();
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpOpen", "", "JRWPS")).await, GateVerdict::Allow);
    assert_eq!(
        e.hooks.before_subscribe(&join_to(T, "grpClosed", "", "JRWPS")).await,
        reject(403, "group grpClosed is invite-only: ask an owner or an admin to add you")
    );
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpNews", "JRWP", "JRWPS")).await, restrict("JRPS"));
    assert_eq!(
        e.hooks.before_subscribe(&join_to(T, "grpNews", "", "JRP")).await,
        GateVerdict::Allow,
        "nothing to take away"
    );
    let verdicts = e.registry.render_metrics();
    let line =
        "palaver_plugin_verdicts_total{plugin=\"access-rules\",hook=\"before-subscribe\",verdict=\"restrict\"} 1";
    assert!(verdicts.contains(line), "{verdicts}");
}

#[tokio::test]
async fn restrictions_chain_in_priority_order() {
    let e = env();
    with_access_rules(&e); // priority 100
    e.load("gate-fault-1.0.0"); // priority 200, on by default
    e.registry.set_settings(T, "access-rules", Some(json!({ "read_only_joins": ["grpNews"] }))).unwrap();
    // gate-fault answers with the mode it was handed: access-rules had taken `W` away already.
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpNews", "echo", "JRWPS")).await, reject(418, "JRPS"));
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpOther", "echo", "JRWPS")).await, reject(418, "JRWPS"));
    // Both narrow: the join goes on with what is left of both.
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpNews", "drop-s", "JRWPS")).await, restrict("JRP"));
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpOther", "drop-s", "JRWPS")).await, restrict("JRWP"));
    // The first reject wins: access-rules refuses an invite-only group before gate-fault is asked.
    e.registry.set_settings(T, "access-rules", Some(json!({ "invite_only_groups": ["grpNews"] }))).unwrap();
    let calls = e.info("gate-fault").before_subscribe.calls;
    let GateVerdict::Reject { code: 403, .. } = e.hooks.before_subscribe(&join_to(T, "grpNews", "echo", "JRWPS")).await
    else {
        panic!("access-rules refuses first")
    };
    assert_eq!(e.info("gate-fault").before_subscribe.calls, calls, "nothing is asked after a reject");
}

#[tokio::test]
async fn a_restriction_that_adds_a_right_is_a_fault_on_the_failure_policy() {
    let e = env();
    e.load("gate-fault-1.0.0");
    let unavailable =
        reject(Reason::PluginUnavailable.status(), "join check gate-fault is unavailable; try again later");
    assert_eq!(Reason::PluginUnavailable.status(), 503);
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "grant-d", "JRWPS")).await, unavailable);
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "delta", "JRWPS")).await, unavailable, "a change");
    assert_eq!(faults(&e, "gate-fault", Hook::BeforeSubscribe, FaultKind::InvalidOutput), 2);
    let fault = e.registry.last_fault("gate-fault").expect("the fault is kept");
    assert!(fault.contains("before-subscribe: invalid-output") && fault.contains("is a change"), "{fault}");
    // Without `J` the member could never attach: refused too (a gate that wants the user out rejects).
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "no-join", "JRWPS")).await, unavailable, "no J");
    assert_eq!(faults(&e, "gate-fault", Hook::BeforeSubscribe, FaultKind::InvalidOutput), 3);
    let fault = e.registry.last_fault("gate-fault").expect("the fault is kept");
    assert!(fault.contains("restrict mode RWPS lacks J"), "{fault}");
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "boom", "JRWPS")).await, unavailable);
    assert_eq!(faults(&e, "gate-fault", Hook::BeforeSubscribe, FaultKind::Trap), 1);
    // A tenant that opens the policy lets the join go on as if the gate had allowed it.
    e.registry.set_tenant_failure_policy(T, "gate-fault", Hook::BeforeSubscribe, Some(FailurePolicy::Open)).unwrap();
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "grant-d", "JRWPS")).await, GateVerdict::Allow);
    let other = TenantId(2);
    assert_eq!(e.hooks.before_subscribe(&join_to(other, "grpX", "grant-d", "JRWPS")).await, unavailable);
    // The gates' policy may be chosen either way.
    let policies = e.registry.failure_policies(T, "gate-fault").unwrap();
    assert_eq!(policies, vec![(Hook::OnLogin, FailurePolicy::Closed), (Hook::BeforeSubscribe, FailurePolicy::Open)]);
}

#[test]
fn a_fixture_expecting_a_restriction_without_j_is_refused_at_load() {
    let e = env();
    let refused = e.load_edited("gate-fault-1.0.0", |m| {
        m.fixtures.push(Fixture {
            want: Some("no-join".to_owned()),
            ..Fixture::new(
                "read without joining",
                Hook::BeforeSubscribe,
                Expect::Restrict { mode: Some("RWPS".into()) },
            )
        });
    });
    let err = refused.expect_err("the host refuses a restriction without J").to_string();
    assert!(err.contains("read without joining") && err.contains("lacks J"), "{err}");
}

/// A login-only gate (`[hooks.on-login]` without `[hooks.before-subscribe]`) is not called on joins: the join path
/// sees no gate, and a join it would trap on (fail closed) goes on.
#[tokio::test]
async fn a_gate_runs_only_the_hooks_its_manifest_names() {
    let e = env();
    e.load_edited("gate-fault-1.0.0", |m| {
        m.hooks.before_subscribe = None;
        m.fixtures.retain(|f| f.hook != Hook::BeforeSubscribe);
    })
    .expect("a login-only gate loads");
    assert!(e.hooks.gates_login(T) && !e.hooks.gates_join(T), "it gates logins only");
    assert_eq!(e.hooks.before_subscribe(&join_to(T, "grpX", "boom", "JRWPS")).await, GateVerdict::Allow);
    let info = e.info("gate-fault");
    assert_eq!((info.before_subscribe.calls, info.before_subscribe.skipped), (0, 0), "never called");
    assert_eq!(info.hooks, vec![Hook::OnLogin]);
    assert_eq!(e.registry.failure_policies(T, "gate-fault").unwrap(), vec![(Hook::OnLogin, FailurePolicy::Closed)]);
    assert_eq!(
        e.hooks.on_login(&login_from(T, "10.0.0.1", "reject")).await,
        reject(403, &format!("{ACTOR} may not log in from 10.0.0.1")),
        "logins are still gated"
    );
    assert_eq!(e.info("gate-fault").on_login.calls, 1);
}

#[tokio::test]
async fn a_faulted_login_gate_refuses_with_a_retryable_503_unless_open() {
    let e = env();
    e.load("gate-fault-1.0.0");
    assert!(e.hooks.gates_login(T));
    let unavailable = reject(503, "login check gate-fault is unavailable; try again later");
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "app/1.0")).await, GateVerdict::Allow);
    assert_eq!(
        e.hooks.on_login(&login_from(T, "10.0.0.1", "reject")).await,
        reject(403, &format!("{ACTOR} may not log in from 10.0.0.1")),
        "the gate sees the user and the address"
    );
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "boom")).await, unavailable);
    assert_eq!(faults(&e, "gate-fault", Hook::OnLogin, FaultKind::Trap), 1);
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "bad-code")).await, unavailable, "code 200 is no refusal");
    assert_eq!(faults(&e, "gate-fault", Hook::OnLogin, FaultKind::InvalidOutput), 1);
    let started = std::time::Instant::now();
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "spin")).await, unavailable);
    assert!(started.elapsed() < Duration::from_secs(2), "stopped by the 30 ms deadline");
    assert_eq!(faults(&e, "gate-fault", Hook::OnLogin, FaultKind::Deadline), 1);
    e.registry.set_failure_policy("gate-fault", Hook::OnLogin, Some(FailurePolicy::Open)).unwrap();
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "boom")).await, GateVerdict::Allow);
}

#[tokio::test]
async fn an_open_breaker_answers_with_the_policy() {
    let breaker =
        BreakerConfig { failure_threshold: 1, cool_down: Duration::from_secs(60), ..BreakerConfig::default() };
    let e = env_with(RuntimeConfig { breaker, ..config() }, |s| s);
    e.load("gate-fault-1.0.0");
    let unavailable = reject(503, "login check gate-fault is unavailable; try again later");
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "boom")).await, unavailable);
    assert_eq!(e.hooks.on_login(&login_from(T, "10.0.0.1", "app/1.0")).await, unavailable, "skipped");
    assert_eq!(e.info("gate-fault").on_login.skipped, 1);
}

#[tokio::test]
async fn a_canary_tenant_runs_the_canary_gate() {
    let e = env();
    let (mut live, c) = artifact("access-rules-0.1.0");
    live.sha256 = None;
    live.enabled_by_default = true;
    let mut canary = live.clone();
    canary.version = "0.2.0".to_owned();
    let spec = canary.settings.get_mut("read_only_joins").expect("the setting is declared");
    spec.default = Some(json!(["grpNews"]));
    let tenants: BTreeSet<TenantId> = [TenantId(7)].into();
    e.registry
        .apply_rollout(
            "access-rules",
            &RolloutTarget {
                live: Some(ReleaseRef { manifest: &live, component: &c }),
                canary: Some((ReleaseRef { manifest: &canary, component: &c }, tenants)),
            },
        )
        .unwrap();
    let news = |t: u64| join_to(TenantId(t), "grpNews", "", "JRWPS");
    assert_eq!(e.hooks.before_subscribe(&news(1)).await, GateVerdict::Allow, "everyone else runs live");
    assert_eq!(e.hooks.before_subscribe(&news(7)).await, restrict("JRPS"), "tenant 7 runs the canary");
}
