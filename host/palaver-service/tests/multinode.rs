//! Several nodes in one process, linked by the in-process bus and sharing one store: the dispatcher's rules
//! (who on which node gets what, session control, loopback, tenants) without sockets or Redis. The same
//! scenarios run against real processes, Redis and MariaDB in `palaver-server`'s `multinode` tests.

mod harness;

use harness::{Client, basic, cluster, data, of};
use palaver_core::ports::{ControlScope, SessionControlStore};
use palaver_core::{TenantId, UserId};
use palaver_service::{EventTarget, Eviction, Service};
use serde_json::{Value, json};

/// Logs `login` in on `svc` after a `{hi}` that names a device and platform.
async fn device(svc: &Service, login: &str, dev: &str, platf: &str) -> Client {
    let mut c = Client::connect(svc);
    c.req("hi", json!({ "ver": "0.25.3", "ua": "test/1.0", "dev": dev, "platf": platf })).await;
    let (ctrl, _) = c.req("login", json!({ "scheme": "basic", "secret": basic(login, "secret123") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    c.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    c.token = ctrl["params"]["token"].as_str().unwrap().to_owned();
    c
}

fn is_data(v: &Value) -> bool {
    v.get("data").is_some()
}

fn closed(frames: &[Value]) -> bool {
    frames.iter().any(|f| f["closed"] == true)
}

#[tokio::test]
async fn p2p_reaches_every_device_of_both_users_once() {
    let nodes = cluster(2, |_| {});
    let mut a1 = Client::connect(&nodes[0]);
    a1.signup("alice", "secret123").await;
    let mut b1 = Client::connect(&nodes[0]);
    b1.signup("bob", "secret123").await;
    let mut a2 = device(&nodes[1], "alice", "tablet", "web").await;
    let mut b2 = device(&nodes[1], "bob", "laptop", "web").await;
    let (alice, bob) = (a1.user.clone(), b1.user.clone());
    for (c, peer) in [(&mut a1, &bob), (&mut a2, &bob), (&mut b1, &alice), (&mut b2, &alice)] {
        assert_eq!(c.sub(peer).await["code"], 200);
    }
    a2.collect(50).await;
    b2.collect(50).await;
    let (ack, own) = b1.req("pub", json!({ "topic": alice, "content": "hello" })).await;
    assert_eq!(ack["code"], 202);
    assert_eq!(data(&own).len(), 1, "the sending session sees its message too (no noecho)");
    let (d, _) = a2.wait_for("data on alice's other node", is_data).await;
    assert_eq!(d["data"]["content"], "hello");
    assert_eq!(d["data"]["topic"], bob.as_str());
    let (d, _) = b2.wait_for("data on bob's other device", is_data).await;
    assert_eq!(d["data"]["topic"], alice.as_str());
    assert_eq!(data(&a1.drain()).len(), 1);
    // Exactly once each: nothing more arrives.
    assert!(data(&a2.collect(100).await).is_empty());
    assert!(data(&b2.collect(100).await).is_empty());
    // Stored once: the history seen from the other node holds the one message.
    let (_, frames) = a2.req("get", json!({ "topic": bob, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 1);
}

#[tokio::test]
async fn group_members_on_three_nodes_all_receive_in_order() {
    let nodes = cluster(3, |_| {});
    let mut owner = Client::connect(&nodes[0]);
    owner.signup("owner", "secret123").await;
    let grp = owner.new_group("team").await;
    let mut members = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let mut c = Client::connect(node);
        c.signup(&format!("member{i}"), "secret123").await;
        assert_eq!(c.sub(&grp).await["code"], 200);
        members.push(c);
    }
    for i in 0..5 {
        assert_eq!(owner.publish(&grp, json!(format!("m{i}"))).await["code"], 202);
    }
    for c in &mut members {
        let mut got = Vec::new();
        while got.len() < 5 {
            let (d, _) = c.wait_for("group data", is_data).await;
            got.push(d["data"]["seq"].as_i64().unwrap());
        }
        assert_eq!(got, [1, 2, 3, 4, 5]);
    }
}

#[tokio::test]
async fn a_read_on_one_device_reaches_the_other_device_and_the_peer() {
    let nodes = cluster(2, |_| {});
    let mut a1 = Client::connect(&nodes[0]);
    a1.signup("alice", "secret123").await;
    let mut b = Client::connect(&nodes[1]);
    b.signup("bob", "secret123").await;
    let mut a2 = device(&nodes[1], "alice", "phone", "ios").await;
    let (alice, bob) = (a1.user.clone(), b.user.clone());
    a1.sub(&bob).await;
    b.sub(&alice).await;
    a2.sub("me").await;
    b.publish(&alice, json!("one")).await;
    a1.wait_for("data", is_data).await;
    a1.send(json!({ "note": { "topic": bob, "what": "read", "seq": 1 } })).await;
    let (p, _) = a2.wait_for("pres read on me", |v| v["pres"]["what"] == "read").await;
    assert_eq!(p["pres"]["src"], bob.as_str());
    assert_eq!(p["pres"]["seq"], 1);
    let (i, _) = b.wait_for("info read", |v| v["info"]["what"] == "read").await;
    assert_eq!(i["info"]["from"], alice.as_str());
    assert_eq!(i["info"]["topic"], alice.as_str());
}

#[tokio::test]
async fn evicting_a_device_closes_only_that_device_wherever_it_is() {
    let nodes = cluster(2, |_| {});
    let mut setup = Client::connect(&nodes[0]);
    setup.signup("carol", "secret123").await;
    let user = UserId::parse(&setup.user).unwrap();
    let mut phone = device(&nodes[1], "carol", "phone1", "ios").await;
    let mut laptop = device(&nodes[0], "carol", "laptop1", "web").await;
    let ev = Eviction { device: Some("phone1".into()), revoke_tokens: false, reason: "kicked".into() };
    assert_eq!(nodes[0].evict(TenantId::DEFAULT, user, ev).await.unwrap(), 0, "nothing of it on node0");
    let (ctrl, _) = phone.wait_for("205 on the phone", |v| v["ctrl"]["code"] == 205).await;
    assert_eq!(ctrl["ctrl"]["params"]["reason"], "kicked");
    assert!(closed(&phone.collect(50).await));
    assert!(!closed(&laptop.collect(100).await), "the laptop stays");
    assert!(!closed(&setup.collect(0).await));
}

#[tokio::test]
async fn a_password_change_closes_every_other_session_and_revokes_tokens() {
    let nodes = cluster(2, |_| {});
    let mut main = Client::connect(&nodes[0]);
    main.signup("dave", "secret123").await;
    let old_token = main.token.clone();
    let mut other = device(&nodes[1], "dave", "tab", "web").await;
    let (ctrl, _) = main
        .req(
            "acc",
            json!({ "user": main.user, "scheme": "basic", "secret": basic("dave", "newsecret1"),
            "tmpscheme": "basic", "tmpsecret": basic("dave", "secret123") }),
        )
        .await;
    assert_eq!(ctrl["code"], 200);
    let (c, _) = other.wait_for("205 on the other node", |v| v["ctrl"]["code"] == 205).await;
    assert_eq!(c["ctrl"]["params"]["reason"], "password changed");
    assert!(!closed(&main.collect(100).await), "the session that changed it stays");
    let mut again = Client::connect(&nodes[1]);
    again.hi().await;
    let (ctrl, _) = again.req("login", json!({ "scheme": "token", "secret": old_token })).await;
    assert_eq!(ctrl["code"], 401);
}

#[tokio::test]
async fn stale_controls_never_close_newer_sessions_and_lost_ones_are_caught_by_the_check() {
    let (nodes, control) = harness::cluster_parts(2, |_| {});
    let mut first = Client::connect(&nodes[0]);
    first.signup("erin", "secret123").await;
    let user = UserId::parse(&first.user).unwrap();
    nodes[0].evict(TenantId::DEFAULT, user, Eviction::default()).await.unwrap();
    assert!(closed(&first.collect(50).await));
    // A session opened after the control is judged by the newer version and survives a replay of it.
    let mut later = device(&nodes[1], "erin", "d", "web").await;
    nodes[1].heartbeat().await;
    assert!(!closed(&later.collect(100).await));
    // The heartbeat's check closes a session whose control never arrived: bump the counter without the bus.
    control.bump(TenantId::DEFAULT, user, &ControlScope::User).await.unwrap();
    assert!(!closed(&later.collect(50).await), "nothing on the bus");
    nodes[1].heartbeat().await;
    let frames = later.collect(50).await;
    assert!(closed(&frames), "{frames:?}");
    assert_eq!(of(&frames, "ctrl")[0]["code"], 205);
}

#[tokio::test]
async fn a_new_login_on_the_same_platform_evicts_the_older_session_when_configured() {
    let nodes = cluster(2, |c| c.evict_same_platform = true);
    let mut setup = Client::connect(&nodes[0]);
    setup.signup("fay", "secret123").await;
    let mut old_ios = device(&nodes[0], "fay", "p1", "ios").await;
    let mut web = device(&nodes[0], "fay", "w1", "web").await;
    let mut new_ios = device(&nodes[1], "fay", "p2", "ios").await;
    let (c, _) = old_ios.wait_for("205 for the older ios session", |v| v["ctrl"]["code"] == 205).await;
    assert_eq!(c["ctrl"]["params"]["reason"], "signed in elsewhere");
    assert!(!closed(&web.collect(100).await));
    assert!(!closed(&new_ios.collect(50).await));
}

#[tokio::test]
async fn business_events_reach_the_users_devices_on_other_nodes() {
    let nodes = cluster(2, |_| {});
    let mut a = Client::connect(&nodes[1]);
    a.signup("gus", "secret123").await;
    let user = UserId::parse(&a.user).unwrap();
    let here =
        nodes[0].emit_event(TenantId::DEFAULT, EventTarget::User(user), "friend.request.created", json!({ "id": 1 }));
    assert_eq!(here, 0);
    let (info, _) = a.wait_for("business info", |v| v.get("info").is_some()).await;
    assert_eq!(info["info"]["event"], "friend.request.created");
    assert_eq!(info["info"]["what"], "im");
}

#[tokio::test]
async fn tenants_never_see_each_others_events_across_nodes() {
    let nodes = cluster(2, |_| {});
    let mut t1 = Client::connect(&nodes[0]);
    t1.signup("hal", "secret123").await;
    let mut t2 = Client::connect_tenant(&nodes[1], TenantId(2));
    t2.signup("hal", "secret123").await;
    // Same login and, in this store, possibly the same user id in both tenants: only the tenant tells them apart.
    let u1 = UserId::parse(&t1.user).unwrap();
    nodes[0].emit_event(TenantId::DEFAULT, EventTarget::User(u1), "x.y", json!({}));
    let u2 = UserId::parse(&t2.user).unwrap();
    nodes[0].emit_event(TenantId::DEFAULT, EventTarget::User(u2), "x.y", json!({}));
    assert!(of(&t2.collect(150).await, "info").is_empty());
    assert_eq!(nodes[1].metrics().bus_received_count("applied"), 2, "both applied, neither delivered to tenant 2");
}
