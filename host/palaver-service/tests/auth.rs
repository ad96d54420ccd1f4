//! Credential attacks a client can try over the protocol: password guessing (throttled per login and per
//! address, with equal work for logins that do not exist), a stolen session changing the password, look-alike
//! logins, and oversized or too many of what a client may send. Driven in process through the harness.

mod harness;

use harness::{Client, basic, cluster_with_login_failures, service, service_with};
use palaver_core::ports::{Backoff, LoginFailureStore};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis};
use palaver_service::{LoginLimits, ServiceConfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Shared failed-login counters in memory (what Redis is to many nodes), which can be switched off.
#[derive(Default)]
struct SharedFailures {
    counts: parking_lot::Mutex<HashMap<(TenantId, String), (u32, UnixMillis)>>,
    down: AtomicBool,
}

impl SharedFailures {
    fn up(&self) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) { Err(StoreError::Unavailable("down".into())) } else { Ok(()) }
    }
}

#[async_trait::async_trait]
impl LoginFailureStore for SharedFailures {
    async fn blocked_until(&self, t: TenantId, keys: &[&str], now: UnixMillis) -> StoreResult<Option<UnixMillis>> {
        self.up()?;
        let counts = self.counts.lock();
        Ok(keys.iter().filter_map(|k| counts.get(&(t, k.to_string())).map(|c| c.1)).filter(|u| *u > now).max())
    }

    async fn record_failure(&self, t: TenantId, keys: &[(&str, Backoff)], now: UnixMillis) -> StoreResult<()> {
        self.up()?;
        let mut counts = self.counts.lock();
        for (k, b) in keys {
            let c = counts.entry((t, k.to_string())).or_insert((0, 0));
            c.0 += 1;
            let wait = b.after(c.0);
            if wait > 0 {
                c.1 = now + wait as i64;
            }
        }
        Ok(())
    }

    async fn clear(&self, t: TenantId, key: &str) -> StoreResult<()> {
        self.up()?;
        self.counts.lock().remove(&(t, key.to_owned()));
        Ok(())
    }
}

fn limits(per_login: u32, per_addr: u32) -> ServiceConfig {
    ServiceConfig {
        login_limits: LoginLimits { per_login, per_addr, backoff_max: Duration::from_secs(60) },
        ..ServiceConfig::default()
    }
}

async fn change_password(c: &mut Client, new: &str, current: Option<(&str, &str)>) -> Value {
    let mut body = json!({ "user": c.user.clone(), "scheme": "basic", "secret": basic("alice", new) });
    if let Some((login, pass)) = current {
        body["tmpscheme"] = json!("basic");
        body["tmpsecret"] = json!(basic(login, pass));
    }
    c.req("acc", body).await.0
}

#[tokio::test]
async fn a_password_change_needs_the_current_password() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("alice", "alice123").await;
    Client::connect(&svc).signup("mallory", "mallory1").await;

    // A stolen session cannot lock the owner out: without the current password the change is refused.
    let ctrl = change_password(&mut a, "stolen1", None).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");
    assert!(ctrl["text"].as_str().unwrap().contains("current password"), "{ctrl}");
    let ctrl = change_password(&mut a, "stolen1", Some(("alice", "wrong"))).await;
    assert_eq!(ctrl["code"], 401, "a wrong current password: {ctrl}");
    let ctrl = change_password(&mut a, "stolen1", Some(("mallory", "mallory1"))).await;
    assert_eq!(ctrl["code"], 401, "someone else's credential proves nothing: {ctrl}");
    let mut body = json!({ "user": a.user.clone(), "secret": basic("alice", "stolen1") });
    body["tmpscheme"] = json!("sms");
    body["tmpsecret"] = json!("123456");
    assert_eq!(a.req("acc", body.clone()).await.0["code"], 401, "an unknown tmpscheme");
    // A reset code stands in for a login, so a logged-in session has no use for one (Tinode's 409).
    body["tmpscheme"] = json!("code");
    assert_eq!(a.req("acc", body).await.0["code"], 409, "a reset code while logged in");
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 200, "nothing changed");

    let ctrl = change_password(&mut a, "newpass1", Some(("ALICE", "alice123"))).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(Client::connect(&svc).login("alice", "newpass1").await["code"], 200);
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 401);
}

#[tokio::test]
async fn guessing_the_current_password_is_throttled_like_a_login() {
    let svc = service_with(limits(3, 100));
    let mut a = Client::connect(&svc);
    a.signup("alice", "alice123").await;
    for _ in 0..3 {
        assert_eq!(change_password(&mut a, "x12345", Some(("alice", "guess"))).await["code"], 401);
    }
    let ctrl = change_password(&mut a, "x12345", Some(("alice", "alice123"))).await;
    assert_eq!(ctrl["code"], 429, "{ctrl}");
    assert!(ctrl["params"]["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{ctrl}");
}

#[tokio::test]
async fn the_current_password_check_can_be_turned_off() {
    let svc = service_with(ServiceConfig { password_change_requires_current: false, ..ServiceConfig::default() });
    let mut a = Client::connect(&svc);
    a.signup("alice", "alice123").await;
    assert_eq!(change_password(&mut a, "newpass1", None).await["code"], 200);
    assert_eq!(Client::connect(&svc).login("alice", "newpass1").await["code"], 200);
}

#[tokio::test]
async fn failed_logins_back_off_with_429_and_a_retry_hint() {
    let svc = service_with(limits(5, 1000));
    Client::connect(&svc).signup("alice", "alice123").await;
    for i in 0..5 {
        assert_eq!(Client::connect(&svc).login("alice", &format!("guess{i}")).await["code"], 401);
    }
    // Now even the right password waits: the guesser cannot tell a hit from the backoff.
    let ctrl = Client::connect(&svc).login("alice", "alice123").await;
    assert_eq!(ctrl["code"], 429, "{ctrl}");
    assert_eq!(ctrl["text"], "too many failed logins: retry later");
    let wait = ctrl["params"]["retry_after_ms"].as_u64().unwrap();
    assert!((1..=1000).contains(&wait), "the first backoff is at most 1 s: {wait}");
    assert_eq!(Client::connect(&svc).login("ALICE", "alice123").await["code"], 429, "case does not dodge it");

    // Logins that do not exist back off the same way, so the 429 tells nothing about existence.
    for _ in 0..5 {
        assert_eq!(Client::connect(&svc).login("nobody", "guess").await["code"], 401);
    }
    assert_eq!(Client::connect(&svc).login("nobody", "guess").await["code"], 429);
    Client::connect(&svc).signup("bob", "bob12345").await;
    assert_eq!(Client::connect(&svc).login("bob", "bob12345").await["code"], 200, "other logins are unaffected");

    tokio::time::sleep(Duration::from_millis(wait + 50)).await;
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 200, "after the backoff");
    assert_eq!(Client::connect(&svc).login("alice", "wrong").await["code"], 401, "a success reset the count");
}

#[tokio::test]
async fn one_address_guessing_many_logins_backs_off() {
    let svc = service_with(limits(100, 4));
    Client::connect(&svc).signup("alice", "alice123").await;
    for i in 0..4 {
        assert_eq!(Client::connect_from(&svc, "192.0.2.7:4000").login(&format!("user{i}"), "pw1").await["code"], 401);
    }
    let ctrl = Client::connect_from(&svc, "192.0.2.7:4001").login("alice", "alice123").await;
    assert_eq!(ctrl["code"], 429, "another port of the same address: {ctrl}");
    let ctrl = Client::connect_from(&svc, "192.0.2.8:4000").login("alice", "alice123").await;
    assert_eq!(ctrl["code"], 200, "another address: {ctrl}");
}

#[tokio::test]
async fn unknown_logins_cost_the_same_hash_work_as_wrong_passwords() {
    let svc = service();
    Client::connect(&svc).signup("alice", "alice123").await;
    let before = svc.hasher().verifications();
    assert_eq!(Client::connect(&svc).login("alice", "wrong").await["code"], 401);
    assert_eq!(svc.hasher().verifications(), before + 1);
    assert_eq!(Client::connect(&svc).login("nobody", "wrong").await["code"], 401);
    assert_eq!(svc.hasher().verifications(), before + 2, "an unknown login is verified against the dummy hash");
}

#[tokio::test]
async fn look_alike_logins_are_one_login() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("\u{FF41}lice", "alice123").await; // fullwidth "ａ"
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 200);
    assert_eq!(Client::connect(&svc).login("\u{FF21}LICE", "alice123").await["code"], 200);
    let mut dup = Client::connect(&svc);
    dup.hi().await;
    let (ctrl, _) = dup.req("acc", json!({ "user": "new", "secret": basic("ALICE", "x12345") })).await;
    assert_eq!(ctrl["code"], 409, "{ctrl}");
}

#[tokio::test]
async fn sessions_per_user_are_capped() {
    let svc = service_with(ServiceConfig { max_sessions_per_user: 2, ..ServiceConfig::default() });
    let mut first = Client::connect(&svc);
    first.signup("alice", "alice123").await;
    let mut second = Client::connect(&svc);
    assert_eq!(second.login("alice", "alice123").await["code"], 200);
    let ctrl = Client::connect(&svc).login("alice", "alice123").await;
    assert_eq!(ctrl["code"], 422, "{ctrl}");
    assert!(ctrl["text"].as_str().unwrap().contains("too many sessions"), "{ctrl}");
    second.close().await;
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 200, "a slot freed");
}

#[tokio::test]
async fn oversized_user_agents_and_profile_blobs_are_refused() {
    let svc = service_with(ServiceConfig { max_desc_bytes: 1024, ..ServiceConfig::default() });
    let mut c = Client::connect(&svc);
    let (ctrl, _) = c.req("hi", json!({ "ver": "0.25.3", "ua": "x".repeat(257) })).await;
    assert_eq!(ctrl["code"], 413, "{ctrl}");

    let mut c = Client::connect(&svc);
    c.hi().await;
    let big = json!({ "fn": "x".repeat(2000) });
    let (ctrl, _) = c
        .req(
            "acc",
            json!({ "user": "new", "secret": basic("alice", "alice123"), "login": true, "desc": { "public": big } }),
        )
        .await;
    assert_eq!(ctrl["code"], 413, "a sign-up with a huge public: {ctrl}");
    let mut a = Client::connect(&svc);
    a.signup("alice", "alice123").await;
    let (ctrl, _) = a.req("set", json!({ "topic": "me", "desc": { "public": big } })).await;
    assert_eq!(ctrl["code"], 413, "{ctrl}");
    let (ctrl, _) = a.req("sub", json!({ "topic": "new1", "set": { "desc": { "private": big } } })).await;
    assert_eq!(ctrl["code"], 413, "{ctrl}");
    let group = a.new_group("g").await;
    let (ctrl, _) = a.req("set", json!({ "topic": group, "desc": { "private": big } })).await;
    assert_eq!(ctrl["code"], 413, "{ctrl}");
    let (ctrl, _) = a.req("set", json!({ "topic": group, "desc": { "private": { "note": "small" } } })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
}

#[tokio::test]
async fn groups_per_user_are_capped_however_the_user_would_join() {
    let svc = service_with(ServiceConfig { max_groups_per_user: 2, ..ServiceConfig::default() });
    let mut a = Client::connect(&svc);
    a.signup("alice", "alice123").await;
    let mut b = Client::connect(&svc);
    b.signup("bob", "bob12345").await;
    let first = a.new_group("one").await;
    a.new_group("two").await;
    let (ctrl, _) = a.req("sub", json!({ "topic": "new1" })).await;
    assert_eq!(ctrl["code"], 422, "a third group created: {ctrl}");
    assert!(ctrl["text"].as_str().unwrap().contains("too many groups"), "{ctrl}");

    let open = b.new_group("open").await;
    assert_eq!(a.sub(&open).await["code"], 422, "a third group joined");
    let (ctrl, _) = b.req("set", json!({ "topic": open, "sub": { "user": a.user.clone(), "mode": "JRWP" } })).await;
    assert_eq!(ctrl["code"], 422, "a third group by invitation: {ctrl}");
    let (ctrl, _) = a.req("del", json!({ "topic": first, "what": "topic", "hard": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    a.new_group("three").await;
}

#[tokio::test]
async fn guesses_spread_over_nodes_meet_one_shared_backoff() {
    let shared = Arc::new(SharedFailures::default());
    let nodes = cluster_with_login_failures(3, shared.clone(), |c| c.login_limits = limits(3, 1000).login_limits);
    Client::connect(&nodes[0]).signup("alice", "alice123").await;
    for node in &nodes {
        assert_eq!(Client::connect(node).login("alice", "guess").await["code"], 401, "one guess per node");
    }
    let ctrl = Client::connect(&nodes[1]).login("alice", "alice123").await;
    assert_eq!(ctrl["code"], 429, "the third guess, on another node, started the backoff everywhere: {ctrl}");
    assert!(shared.counts.lock().keys().any(|(_, k)| k == "login:alice"), "counted under the login's name");

    // The shared counters away: each node falls back to its own (which counted the same guesses).
    shared.down.store(true, Ordering::SeqCst);
    assert_eq!(Client::connect(&nodes[2]).login("bob", "x12345").await["code"], 401, "logins still work");
    for _ in 0..3 {
        assert_eq!(Client::connect(&nodes[2]).login("carol", "guess").await["code"], 401);
    }
    assert_eq!(Client::connect(&nodes[2]).login("carol", "guess").await["code"], 429, "this node's own counters");
}
