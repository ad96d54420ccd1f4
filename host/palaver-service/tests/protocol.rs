//! The Tinode protocol as the service speaks it, message kind by message kind, with every error code a client
//! can provoke. Driven in process through the harness.

mod harness;

use harness::{Client, basic, data, of, service};
use serde_json::json;

#[tokio::test]
async fn hi_must_come_first_and_reports_limits() {
    let svc = service();
    let mut c = Client::connect(&svc);
    let (ctrl, _) = c.req("login", json!({ "scheme": "basic", "secret": basic("a", "b") })).await;
    assert_eq!(ctrl["code"], 409);
    assert_eq!(ctrl["text"], "command out of sequence");
    let hi = c.hi().await;
    assert_eq!(hi["code"], 201);
    assert_eq!(hi["params"]["ver"], "0.25");
    assert_eq!(hi["params"]["maxMessageSize"], 262144);
    let (old, _) = c.req("hi", json!({ "ver": "0.19" })).await;
    assert_eq!(old["code"], 409, "a repeated hi may not change the version");
    let mut d = Client::connect(&svc);
    let (old, _) = d.req("hi", json!({ "ver": "0.19" })).await;
    assert_eq!(old["code"], 505);
}

#[tokio::test]
async fn malformed_frames_get_400_with_the_id() {
    let svc = service();
    let mut c = Client::connect(&svc);
    let f = c.raw(b"{nope").await;
    assert_eq!(f[0]["ctrl"]["code"], 400);
    let f = c.raw(br#"{"hi":{"id":"7","ver":5}}"#).await;
    assert_eq!(f[0]["ctrl"]["code"], 400);
    assert_eq!(f[0]["ctrl"]["id"], "7");
    let f = c.raw(br#"{"what":{"id":"8"}}"#).await;
    assert_eq!(f[0]["ctrl"]["code"], 400);
    c.hi().await;
    let f = c.raw(br#"{"pub":{"id":"9","topic":"grpX","content":"x"}}"#).await;
    assert_eq!(f[0]["ctrl"]["code"], 401, "pub before login");
    assert_eq!(f[0]["ctrl"]["id"], "9");
}

#[tokio::test]
async fn signup_login_and_token_rules() {
    let svc = service();
    let mut a = Client::connect(&svc);
    let ctrl = a.signup("alice", "alice123").await;
    assert!(ctrl["params"]["user"].as_str().unwrap().starts_with("usr"));
    assert_eq!(ctrl["params"]["desc"]["public"]["fn"], "alice");

    let mut dup = Client::connect(&svc);
    dup.hi().await;
    let (ctrl, _) = dup.req("acc", json!({ "user": "new", "secret": basic("ALICE", "x12345") })).await;
    assert_eq!(ctrl["code"], 409, "a taken login, case-insensitively");

    let mut bad = Client::connect(&svc);
    assert_eq!(bad.login("alice", "wrong").await["code"], 401);
    assert_eq!(bad.login("nobody", "wrong").await["code"], 401);

    let mut t = Client::connect(&svc);
    t.hi().await;
    let (ctrl, _) = t.req("login", json!({ "scheme": "token", "secret": a.token.clone() })).await;
    assert_eq!(ctrl["code"], 200);
    assert_eq!(ctrl["params"]["user"], json!(a.user));
    let (again, _) = t.req("login", json!({ "scheme": "token", "secret": a.token.clone() })).await;
    assert_eq!(again["code"], 409, "already authenticated");

    // A password change revokes older tokens.
    let old = a.token.clone();
    let (ctrl, _) = a
        .req(
            "acc",
            json!({ "user": a.user.clone(), "secret": basic("alice", "newpass"),
                    "tmpscheme": "basic", "tmpsecret": basic("alice", "alice123") }),
        )
        .await;
    assert_eq!(ctrl["code"], 200);
    let fresh = ctrl["params"]["token"].as_str().unwrap().to_owned();
    let mut o = Client::connect(&svc);
    o.hi().await;
    assert_eq!(o.req("login", json!({ "scheme": "token", "secret": old })).await.0["code"], 401);
    let mut n = Client::connect(&svc);
    n.hi().await;
    assert_eq!(n.req("login", json!({ "scheme": "token", "secret": fresh })).await.0["code"], 200);
    assert_eq!(Client::connect(&svc).login("alice", "alice123").await["code"], 401);
    assert_eq!(Client::connect(&svc).login("alice", "newpass").await["code"], 200);

    let mut s = Client::connect(&svc);
    s.hi().await;
    assert_eq!(s.req("login", json!({ "scheme": "magic", "secret": "x" })).await.0["code"], 401);
    assert_eq!(s.req("login", json!({ "scheme": "token", "secret": "garbage" })).await.0["code"], 401);
}

#[tokio::test]
async fn group_create_join_publish_and_history() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("ann", "pass123").await;
    let mut b = Client::connect(&svc);
    b.signup("bob", "pass123").await;
    let grp = a.new_group("Team").await;
    assert!(grp.starts_with("grp"));

    let joined = b.sub(&grp).await;
    assert_eq!(joined["code"], 200);
    assert_eq!(joined["params"]["acs"]["mode"], "JRWPS");
    assert_eq!(b.sub(&grp).await["code"], 304, "already subscribed");

    for i in 1..=5 {
        let ctrl = a.publish(&grp, json!(format!("m{i}"))).await;
        assert_eq!(ctrl["code"], 202);
        assert_eq!(ctrl["params"]["seq"], i);
    }
    let got = data(&b.drain());
    assert_eq!(got.len(), 5);
    assert_eq!(got[0]["from"], json!(a.user));
    assert_eq!(got[4]["content"], "m5");

    let (ctrl, frames) = b.req("get", json!({ "topic": grp, "what": "data", "data": { "limit": 3 } })).await;
    assert_eq!(ctrl["code"], 208);
    assert_eq!(ctrl["params"], json!({ "what": "data", "count": 3 }));
    let seqs: Vec<i64> = data(&frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![5, 4, 3], "newest first");
    let (_, frames) = b.req("get", json!({ "topic": grp, "what": "data", "data": { "before": 3 } })).await;
    let seqs: Vec<i64> = data(&frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, vec![2, 1]);
    let (ctrl, _) = b.req("get", json!({ "topic": grp, "what": "data", "data": { "since": 6 } })).await;
    assert_eq!(ctrl["code"], 204);
    assert_eq!(ctrl["params"]["what"], "data");

    let (_, frames) = b.req("get", json!({ "topic": grp, "what": "desc sub" })).await;
    let metas = of(&frames, "meta");
    assert_eq!(metas[0]["desc"]["seq"], 5);
    assert_eq!(metas[0]["desc"]["public"]["fn"], "Team");
    assert_eq!(metas[1]["sub"].as_array().unwrap().len(), 2);

    // Errors: not attached, no W, unknown topic.
    let mut c = Client::connect(&svc);
    c.signup("cid", "pass123").await;
    assert_eq!(c.publish(&grp, json!("x")).await["code"], 409);
    assert_eq!(c.sub("grpDoesNotExist").await["code"], 404);
    let (ctrl, _) = c.req("pub", json!({ "topic": grp })).await;
    assert_eq!(ctrl["code"], 409);
}

#[tokio::test]
async fn noecho_skips_only_the_sending_session() {
    let svc = service();
    let mut a1 = Client::connect(&svc);
    a1.signup("dora", "pass123").await;
    let mut a2 = Client::connect(&svc);
    a2.login("dora", "pass123").await;
    let grp = a1.new_group("Devices").await;
    a2.sub(&grp).await;
    let (ctrl, frames) = a1.req("pub", json!({ "topic": grp, "content": "quiet", "noecho": true })).await;
    assert_eq!(ctrl["code"], 202);
    assert!(data(&frames).is_empty(), "no echo to the sender");
    assert_eq!(data(&a2.drain()).len(), 1, "the other device still gets it");
    let (_, frames) = a1.req("pub", json!({ "topic": grp, "content": "loud" })).await;
    assert_eq!(data(&frames).len(), 1);
    assert_eq!(data(&a2.drain()).len(), 1);
}

#[tokio::test]
async fn client_mid_makes_retries_idempotent() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("erin", "pass123").await;
    let grp = a.new_group("Idem").await;
    let (c1, _) = a.req("pub", json!({ "topic": grp, "content": "once", "client_mid": "m-1" })).await;
    let (c2, f2) = a.req("pub", json!({ "topic": grp, "content": "once", "client_mid": "m-1" })).await;
    assert_eq!(c1["params"]["seq"], c2["params"]["seq"]);
    assert!(data(&f2).is_empty(), "a retry is not fanned out again");
    let (c3, _) = a.req("pub", json!({ "topic": grp, "content": "twice", "client_mid": "m-2" })).await;
    assert_eq!(c3["params"]["seq"], 2);
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 2, "one stored row per client_mid");
    let long = "x".repeat(65);
    let (c4, _) = a.req("pub", json!({ "topic": grp, "content": "x", "client_mid": long })).await;
    assert_eq!(c4["code"], 400);
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 2, "nothing stored for a refused request");
}

#[tokio::test]
async fn p2p_both_ways_and_contacts() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("fay", "pass123").await;
    a.sub("me").await;
    let mut b = Client::connect(&svc);
    b.signup("gus", "pass123").await;
    b.sub("me").await;
    let b_user = b.user.clone();
    let a_user = a.user.clone();
    assert_eq!(a.sub(&b_user).await["code"], 200);
    let pres = of(&b.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "acs" && p["src"] == json!(a_user)), "{pres:?}");
    let ctrl = a.publish(&b_user, json!("hi gus")).await;
    assert_eq!(ctrl["params"]["seq"], 1);
    let pres = of(&b.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "msg" && p["src"] == json!(a_user) && p["seq"] == 1));
    assert_eq!(b.sub(&a_user).await["code"], 200);
    let (_, frames) = b.req("get", json!({ "topic": a_user, "what": "data" })).await;
    let got = data(&frames);
    assert_eq!(got[0]["topic"], json!(a_user), "each side names the topic by the peer");
    assert_eq!(got[0]["content"], "hi gus");
    b.publish(&a_user, json!("hi fay")).await;
    let got = data(&a.drain());
    assert_eq!(got[0]["topic"], json!(b_user));
    assert_eq!(got[0]["content"], "hi fay");
    // One contact on request, as the SDK asks after `{pres acs}`.
    let (_, frames) = b.req("get", json!({ "topic": "me", "what": "sub", "sub": { "topic": a_user } })).await;
    let subs = of(&frames, "meta")[0]["sub"].clone();
    assert_eq!(subs.as_array().unwrap().len(), 1);
    assert_eq!(subs[0]["topic"], json!(a_user));
    // Contacts on me.
    let (_, frames) = a.req("get", json!({ "topic": "me", "what": "sub" })).await;
    let subs = of(&frames, "meta")[0]["sub"].clone();
    assert_eq!(subs[0]["topic"], json!(b_user));
    assert_eq!(subs[0]["online"], true);
    assert_eq!(subs[0]["public"]["fn"], "gus");
    // Going offline is announced to the contact.
    b.close().await;
    let pres = of(&a.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "off" && p["src"] == json!(b_user)), "{pres:?}");
    assert_eq!(a.sub("usrAAAAAAAAAAAE").await["code"], 404, "unknown peer");
    let me = a.user.clone();
    assert_eq!(a.sub(&me).await["code"], 404, "no P2P with oneself");
}

#[tokio::test]
async fn read_and_recv_notes_are_monotonic_and_relayed() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("hal", "pass123").await;
    let mut b1 = Client::connect(&svc);
    b1.signup("ivy", "pass123").await;
    let mut b2 = Client::connect(&svc);
    b2.login("ivy", "pass123").await;
    b2.sub("me").await;
    let grp = a.new_group("Notes").await;
    b1.sub(&grp).await;
    for i in 0..3 {
        a.publish(&grp, json!(i)).await;
    }
    a.drain();
    b1.drain();
    b2.drain();
    b1.send(json!({ "note": { "topic": grp, "what": "read", "seq": 2 } })).await;
    let info = of(&a.drain(), "info");
    assert_eq!(info[0]["what"], "read");
    assert_eq!(info[0]["seq"], 2);
    assert_eq!(info[0]["from"], json!(b1.user));
    let pres = of(&b2.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "read" && p["seq"] == 2 && p["src"] == json!(grp)), "{pres:?}");
    // Lower or equal reads change nothing and are not relayed.
    b1.send(json!({ "note": { "topic": grp, "what": "read", "seq": 1 } })).await;
    assert!(of(&a.drain(), "info").is_empty());
    // Beyond the last seq is dropped.
    b1.send(json!({ "note": { "topic": grp, "what": "read", "seq": 99 } })).await;
    assert!(of(&a.drain(), "info").is_empty());
    let (_, frames) = b1.req("get", json!({ "topic": grp, "what": "desc" })).await;
    let desc = of(&frames, "meta")[0]["desc"].clone();
    assert_eq!(desc["read"], 2);
    assert_eq!(desc["recv"], 2, "read implies recv");
    b1.send(json!({ "note": { "topic": grp, "what": "kp" } })).await;
    assert_eq!(of(&a.drain(), "info")[0]["what"], "kp");
}

#[tokio::test]
async fn set_and_del() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("jay", "pass123").await;
    let mut b = Client::connect(&svc);
    b.signup("kim", "pass123").await;
    let grp = a.new_group("Admin").await;
    b.sub(&grp).await;
    // Only the owner changes the description.
    let (ctrl, _) = b.req("set", json!({ "topic": grp, "desc": { "public": { "fn": "hijack" } } })).await;
    assert_eq!(ctrl["code"], 403);
    let (ctrl, _) =
        a.req("set", json!({ "topic": grp, "desc": { "public": { "fn": "Renamed" } }, "tags": ["news"] })).await;
    assert_eq!(ctrl["code"], 200);
    let (ctrl, _) = a.req("set", json!({ "topic": grp, "tags": ["x"] })).await;
    assert_eq!(ctrl["code"], 400, "a tag below the minimum length");
    // The owner takes W away from kim; kim's publish is then refused.
    let (ctrl, _) = a.req("set", json!({ "topic": grp, "sub": { "user": b.user.clone(), "mode": "JRP" } })).await;
    assert_eq!(ctrl["code"], 200);
    assert_eq!(b.publish(&grp, json!("x")).await["code"], 403);
    for i in 0..4 {
        a.publish(&grp, json!(i)).await;
    }
    // Soft delete hides messages from kim only; hard delete (owner has D) from everyone.
    let (ctrl, _) = b.req("del", json!({ "topic": grp, "delseq": [{ "low": 1, "hi": 3 }] })).await;
    assert_eq!(ctrl["code"], 200);
    let (_, frames) = b.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 2);
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 4);
    let (ctrl, _) = a.req("del", json!({ "topic": grp, "hard": true, "delseq": [{ "low": 4 }] })).await;
    assert_eq!(ctrl["code"], 200);
    let pres = of(&b.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "del"), "{pres:?}");
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 3);
    let (_, frames) = b.req("get", json!({ "topic": grp, "what": "del" })).await;
    assert!(of(&frames, "meta")[0]["del"]["delseq"].as_array().unwrap().len() >= 2);
    let (ctrl, _) = a.req("del", json!({ "topic": grp, "delseq": [{ "low": 0 }] })).await;
    assert_eq!(ctrl["code"], 400);
    // Only the owner deletes the topic; members see it gone.
    let (ctrl, _) = b.req("del", json!({ "topic": grp, "what": "topic" })).await;
    assert_eq!(ctrl["code"], 403);
    b.sub("me").await;
    b.drain();
    let (ctrl, _) = a.req("del", json!({ "topic": grp, "what": "topic" })).await;
    assert_eq!(ctrl["code"], 200);
    assert!(of(&b.drain(), "pres").iter().any(|p| p["what"] == "gone"));
    assert_eq!(b.sub(&grp).await["code"], 404);
}

#[tokio::test]
async fn leave_with_and_without_unsub() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("lea", "pass123").await;
    let mut b = Client::connect(&svc);
    b.signup("max", "pass123").await;
    let grp = a.new_group("Leavers").await;
    b.sub(&grp).await;
    let (ctrl, _) = b.req("leave", json!({ "topic": grp })).await;
    assert_eq!(ctrl["code"], 200);
    a.publish(&grp, json!("after leave")).await;
    assert!(data(&b.drain()).is_empty(), "detached sessions get no data");
    let (ctrl, _) = b.req("leave", json!({ "topic": grp })).await;
    assert_eq!(ctrl["code"], 304);
    b.sub(&grp).await;
    let (ctrl, _) = b.req("leave", json!({ "topic": grp, "unsub": true })).await;
    assert_eq!(ctrl["code"], 200);
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "sub" })).await;
    assert_eq!(of(&frames, "meta")[0]["sub"].as_array().unwrap().len(), 1);
    let (ctrl, _) = a.req("leave", json!({ "topic": grp, "unsub": true })).await;
    assert_eq!(ctrl["code"], 403, "the owner deletes instead of leaving");
}

#[tokio::test]
async fn fnd_finds_users_and_groups_by_tag() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("ned", "pass123").await;
    let mut b = Client::connect(&svc);
    b.signup("ola", "pass123").await;
    let grp = b.new_group("Findable").await;
    a.sub("fnd").await;
    let (ctrl, _) = a.req("set", json!({ "topic": "fnd", "desc": { "public": "tag-ola grouptag" } })).await;
    assert_eq!(ctrl["code"], 200);
    let (_, frames) = a.req("get", json!({ "topic": "fnd", "what": "sub" })).await;
    let subs = of(&frames, "meta")[0]["sub"].as_array().unwrap().clone();
    assert!(subs.iter().any(|s| s["user"] == json!(b.user)));
    assert!(subs.iter().any(|s| s["topic"] == json!(grp)));
    a.req("set", json!({ "topic": "fnd", "desc": { "public": "nothing-matches" } })).await;
    let (ctrl, _) = a.req("get", json!({ "topic": "fnd", "what": "sub" })).await;
    assert_eq!(ctrl["code"], 204);
}

#[tokio::test]
async fn tenants_never_see_each_other() {
    let svc = service();
    let mut a = Client::connect_tenant(&svc, palaver_core::TenantId(1));
    a.signup("same", "pass123").await;
    let mut b = Client::connect_tenant(&svc, palaver_core::TenantId(2));
    b.signup("same", "pass123").await;
    let grp = a.new_group("Tenant one").await;
    assert_eq!(b.sub(&grp).await["code"], 404, "tenant two does not see tenant one's group");
    let mut t = Client::connect_tenant(&svc, palaver_core::TenantId(2));
    t.hi().await;
    let (ctrl, _) = t.req("login", json!({ "scheme": "token", "secret": a.token.clone() })).await;
    assert_eq!(ctrl["code"], 401, "a token is only valid in its tenant");
}

#[tokio::test]
async fn drain_sends_205() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("pam", "pass123").await;
    svc.drain();
    let frames = a.drain();
    assert_eq!(frames[0]["ctrl"]["code"], 205);
    assert_eq!(frames[0]["ctrl"]["text"], "server shutdown");
    assert!(svc.is_draining());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_publishers_get_contiguous_seqs() {
    let svc = service();
    let mut owner = Client::connect(&svc);
    owner.signup("owner8", "pass123").await;
    let grp = owner.new_group("Busy").await;
    let mut tasks = Vec::new();
    for p in 0..8 {
        let mut c = Client::connect(&svc);
        c.signup(&format!("pub{p}"), "pass123").await;
        assert_eq!(c.sub(&grp).await["code"], 200);
        let grp = grp.clone();
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..25 {
                let ctrl = c.publish(&grp, json!({ "p": p, "i": i })).await;
                assert_eq!(ctrl["code"], 202, "{ctrl}");
                seqs.push(ctrl["params"]["seq"].as_i64().unwrap());
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (1..=200).collect::<Vec<i64>>(), "no gap and no duplicate");
    // The last delivery may still be on its way when its publisher has read the ack.
    let mut frames = owner.drain();
    if data(&frames).len() < 200 {
        let (last, before) = owner.wait_for("seq 200", |f| f["data"]["seq"] == 200).await;
        frames.extend(before);
        frames.push(last);
    }
    let seen: Vec<i64> = data(&frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seen, (1..=200).collect::<Vec<i64>>(), "every session receives a topic's messages in seq order");
}

#[tokio::test]
async fn data_ranges_page_back_through_history() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("pager", "pass123").await;
    let grp = a.new_group("Pages").await;
    for i in 1..=30 {
        a.publish(&grp, json!(i)).await;
    }
    a.drain();
    let seqs = |frames: &[serde_json::Value]| -> Vec<i64> {
        data(frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect()
    };
    let (ctrl, frames) = a
        .req(
            "get",
            json!({ "topic": grp, "what": "data", "data": { "ranges": [{ "low": 5, "hi": 8 }, { "low": 20 }] } }),
        )
        .await;
    assert_eq!(seqs(&frames), vec![20, 7, 6, 5]);
    assert_eq!(ctrl["params"]["count"], 4);
    let (_, frames) = a
        .req(
            "get",
            json!({ "topic": grp, "what": "data", "data": { "ranges": [{ "low": 1, "hi": 21 }], "limit": 10 } }),
        )
        .await;
    assert_eq!(seqs(&frames), (11..=20).rev().collect::<Vec<i64>>(), "what the SDK's getMessagesPage asks for");
}

#[tokio::test]
async fn invites_evictions_and_what_strangers_see() {
    let svc = service();
    let mut owner = Client::connect(&svc);
    owner.signup("host", "pass123").await;
    let mut guest = Client::connect(&svc);
    guest.signup("guest", "pass123").await;
    guest.sub("me").await;
    let mut stranger = Client::connect(&svc);
    stranger.signup("stranger", "pass123").await;
    let grp = owner.new_group("Private").await;
    owner.publish(&grp, json!("hello")).await;

    let (_, frames) = stranger.req("get", json!({ "topic": grp, "what": "desc" })).await;
    let desc = of(&frames, "meta")[0]["desc"].clone();
    assert_eq!(desc["public"]["fn"], "Private");
    assert!(desc.get("seq").is_none() && desc.get("defacs").is_none() && desc.get("acs").is_none(), "{desc}");

    let (ctrl, _) =
        owner.req("set", json!({ "topic": grp, "sub": { "user": guest.user.clone(), "mode": "JRWP" } })).await;
    assert_eq!(ctrl["code"], 200);
    let pres = of(&guest.drain(), "pres");
    assert!(
        pres.iter().any(|p| p["what"] == "acs" && p["src"] == json!(grp) && p["dacs"]["given"] == "JRWP"),
        "{pres:?}"
    );
    let joined = guest.sub(&grp).await;
    assert_eq!(joined["params"]["acs"]["given"], "JRWP");
    let (ctrl, _) =
        stranger.req("set", json!({ "topic": grp, "sub": { "user": stranger.user.clone(), "mode": "JRWPAS" } })).await;
    assert_eq!(ctrl["code"], 403, "a stranger cannot subscribe itself through set");

    guest.drain();
    let (ctrl, _) = owner.req("del", json!({ "topic": grp, "what": "sub", "user": guest.user.clone() })).await;
    assert_eq!(ctrl["code"], 200);
    let frames = guest.drain();
    let evicted = of(&frames, "ctrl");
    assert!(
        evicted.iter().any(|c| c["code"] == 205
            && c["text"] == "evicted"
            && c["params"]["unsub"] == true
            && c["topic"] == json!(grp)),
        "{frames:?}"
    );
    owner.publish(&grp, json!("after")).await;
    assert!(data(&guest.drain()).is_empty());
}

#[tokio::test]
async fn profile_and_group_updates_are_announced() {
    let svc = service();
    let mut a = Client::connect(&svc);
    a.signup("quin", "pass123").await;
    a.sub("me").await;
    let mut b = Client::connect(&svc);
    b.signup("rosa", "pass123").await;
    b.sub("me").await;
    let b_user = b.user.clone();
    a.sub(&b_user).await;
    let grp = a.new_group("Announced").await;
    b.sub(&grp).await;
    b.req("leave", json!({ "topic": grp })).await;
    b.drain();
    a.req("set", json!({ "topic": "me", "desc": { "public": { "fn": "Quinn" } } })).await;
    let pres = of(&b.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "upd" && p["src"] == json!(a.user)), "{pres:?}");
    a.req("set", json!({ "topic": grp, "desc": { "public": { "fn": "Renamed" } } })).await;
    let pres = of(&b.drain(), "pres");
    assert!(pres.iter().any(|p| p["what"] == "upd" && p["src"] == json!(grp)), "{pres:?}");
}

#[tokio::test]
async fn loaded_topics_stay_bounded_and_unloaded_ones_continue_their_seqs() {
    let cfg = palaver_service::ServiceConfig { max_loaded_topics: 32, ..palaver_service::ServiceConfig::default() };
    let svc = harness::service_with(cfg);
    let mut c = Client::connect(&svc);
    c.signup("many-topics", "secret1").await;
    let first = c.new_group("first").await;
    assert_eq!(c.publish(&first, json!("one")).await["params"]["seq"], 1);
    for i in 0..200 {
        let grp = c.new_group(&format!("g{i}")).await;
        assert_eq!(c.publish(&grp, json!("x")).await["code"], 202);
        assert!(svc.loaded_topics() <= 33, "{} topics loaded", svc.loaded_topics());
    }
    // The first topic was unloaded long ago; its next message still takes the next seq.
    assert_eq!(c.publish(&first, json!("two")).await["params"]["seq"], 2);
    let metrics = svc.render_metrics();
    assert!(metrics.contains("palaver_loaded_topics "), "{metrics}");
}
