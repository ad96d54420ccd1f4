//! Attacks on the protocol's authorization rules, each reproduced in process: granting rights one does not hold,
//! reading a group one is not in, rejoining after a removal, reaching around P2P defaults, hostile topic names,
//! arithmetic edge values, and acting through a session the server already closed.

mod harness;

use harness::{Client, service};
use palaver_core::UserId;
use serde_json::{Value, json};

/// A group owned by `owner` with `member` joined; returns its name.
async fn group_with(owner: &mut Client, member: &mut Client, defacs: &str) -> String {
    let (ctrl, _) =
        owner.req("sub", json!({ "topic": "new1", "set": { "desc": { "defacs": { "auth": defacs } } } })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let grp = ctrl["topic"].as_str().unwrap().to_owned();
    assert_eq!(member.sub(&grp).await["code"], 200);
    grp
}

async fn set_sub(c: &mut Client, topic: &str, user: &str, mode: &str) -> Value {
    c.req("set", json!({ "topic": topic, "sub": { "user": user, "mode": mode } })).await.0
}

#[tokio::test]
async fn a_member_cannot_grant_rights_it_does_not_hold() {
    let svc = service();
    let (mut owner, mut reader, mut third) = (Client::connect(&svc), Client::connect(&svc), Client::connect(&svc));
    owner.signup("g-owner", "secret1").await;
    reader.signup("g-reader", "secret1").await;
    third.signup("g-third", "secret1").await;
    // A read-only group where members may share (invite) but not write or delete.
    let grp = group_with(&mut owner, &mut reader, "JRPS").await;

    // An invite may not carry W or D: the inviter holds neither.
    let invite = set_sub(&mut reader, &grp, &third.user.clone(), "JRWPD").await;
    assert_eq!(invite["code"], 403, "{invite}");
    let invite = set_sub(&mut reader, &grp, &third.user.clone(), "JRP").await;
    assert_eq!(invite["code"], 200, "within the inviter's own rights: {invite}");

    // The owner gives the reader A (approve) but not W: the reader may now change others' grants, only within
    // what it holds itself.
    let reader_id = reader.user.clone();
    assert_eq!(set_sub(&mut owner, &grp, &reader_id, "JRPAS").await["code"], 200);
    let (want, _) = reader.req("set", json!({ "topic": grp, "sub": { "mode": "JRPAS" } })).await;
    assert_eq!(want["code"], 200, "the reader accepts A: {want}");
    let third_id = third.user.clone();
    assert_eq!(set_sub(&mut reader, &grp, &third_id, "JRWP").await["code"], 403, "W is not the approver's");
    assert_eq!(set_sub(&mut reader, &grp, &third_id, "+D").await["code"], 403, "nor D, as a delta");
    assert_eq!(set_sub(&mut reader, &grp, &third_id, "JR").await["code"], 200, "taking rights away is fine");

    // Nobody, the owner included, hands out O with a grant: ownership moves only by a transfer.
    assert_eq!(set_sub(&mut owner, &grp, &reader_id, "JRWPASDO").await["code"], 403);
    let (desc, _) = third.req("get", json!({ "topic": grp, "what": "desc" })).await;
    assert_eq!(desc["desc"]["acs"]["given"], "JR", "{desc}");
}

#[tokio::test]
async fn strangers_see_a_group_s_public_description_and_nothing_else() {
    let svc = service();
    let (mut owner, mut member, mut stranger) = (Client::connect(&svc), Client::connect(&svc), Client::connect(&svc));
    owner.signup("v-owner", "secret1").await;
    member.signup("v-member", "secret1").await;
    stranger.signup("v-stranger", "secret1").await;
    let grp = group_with(&mut owner, &mut member, "JRWPS").await;
    assert_eq!(owner.publish(&grp, json!("members only")).await["code"], 202);

    for what in ["sub", "tags", "data", "del", "desc sub"] {
        let (ctrl, frames) = stranger.req("get", json!({ "topic": grp, "what": what })).await;
        assert_eq!(ctrl["code"], 403, "{what}: {ctrl}");
        assert!(frames.iter().all(|f| f.get("meta").is_none() && f.get("data").is_none()), "{what}: {frames:?}");
    }
    let (desc, _) = stranger.req("get", json!({ "topic": grp, "what": "desc" })).await;
    assert!(desc["desc"].get("acs").is_none() && desc["desc"].get("seq").is_none(), "{desc}");

    let (subs, _) = member.req("get", json!({ "topic": grp, "what": "sub" })).await;
    assert_eq!(subs["sub"].as_array().map(Vec::len), Some(2), "members see the member list: {subs}");
}

#[tokio::test]
async fn a_removed_member_cannot_rejoin_until_an_approver_invites_them() {
    let svc = service();
    let (mut owner, mut member, mut other) = (Client::connect(&svc), Client::connect(&svc), Client::connect(&svc));
    owner.signup("b-owner", "secret1").await;
    member.signup("b-member", "secret1").await;
    other.signup("b-other", "secret1").await;
    let grp = group_with(&mut owner, &mut member, "JRWPS").await;
    assert_eq!(other.sub(&grp).await["code"], 200);
    let member_id = member.user.clone();

    let (del, _) = owner.req("del", json!({ "topic": grp, "what": "sub", "user": member_id })).await;
    assert_eq!(del["code"], 200, "{del}");
    let again = member.sub(&grp).await;
    assert_eq!(again["code"], 403, "{again}");
    assert_eq!(again["text"], "permission denied: you were removed from this group");
    // A plain member (S but not A) cannot bring them back either.
    assert_eq!(set_sub(&mut other, &grp, &member_id, "JRWP").await["code"], 403);
    // The owner can.
    assert_eq!(set_sub(&mut owner, &grp, &member_id, "JRWP").await["code"], 200);
    assert_eq!(member.sub(&grp).await["code"], 200);

    // Leaving on one's own leaves no mark.
    let (leave, _) = other.req("leave", json!({ "topic": grp, "unsub": true })).await;
    assert_eq!(leave["code"], 200);
    assert_eq!(other.sub(&grp).await["code"], 200);
}

#[tokio::test]
async fn p2p_names_resolve_one_conversation_and_the_starter_gets_the_peer_s_defaults() {
    let svc = service();
    let (mut a, mut b) = (Client::connect(&svc), Client::connect(&svc));
    a.signup("p-alice", "secret1").await;
    b.signup("p-bob", "secret1").await;
    // Bob's defaults let strangers read and be present but not write to him.
    let (set, _) = b.req("set", json!({ "topic": "me", "desc": { "defacs": { "auth": "JRP" } } })).await;
    assert_eq!(set["code"], 200, "{set}");
    let bob = b.user.clone();
    let sub = a.sub(&bob).await;
    assert_eq!(sub["code"], 200, "{sub}");
    assert_eq!(sub["params"]["acs"]["given"], "JRP", "{sub}");
    assert_eq!(a.publish(&bob, json!("hi")).await["code"], 403, "Bob's defaults do not let strangers write");

    // The stored name with the parties the other way round is the same conversation, not a second one.
    let (ua, ub) = (UserId::parse(&a.user).unwrap(), UserId::parse(&bob).unwrap());
    let name = palaver_core::p2p_name(ua, ub);
    let mut bytes = base64_decode(&name[3..]);
    bytes.rotate_left(8);
    let reversed = format!("p2p{}", base64_encode(&bytes));
    assert_ne!(reversed, name);
    let (get, _) = b.req("get", json!({ "topic": reversed, "what": "desc" })).await;
    let (get2, _) = b.req("get", json!({ "topic": name, "what": "desc" })).await;
    assert_eq!(get["desc"]["created"], get2["desc"]["created"], "{get} {get2}");
    assert_eq!(b.sub(&reversed).await["code"], 200);
    assert_eq!(b.sub(&name).await["code"], 304, "already attached: the same topic");

    // No conversation with oneself, however the name is spelled.
    let own = format!("p2p{}", base64_encode(&[ua.0.to_le_bytes(), ua.0.to_le_bytes()].concat()));
    assert_eq!(a.sub(&own).await["code"], 404);
    // A user whose defaults hold no J cannot be contacted at all, and is not told of an attempt.
    let mut c = Client::connect(&svc);
    c.signup("p-carol", "secret1").await;
    let (set, _) = c.req("set", json!({ "topic": "me", "desc": { "defacs": { "auth": "N" } } })).await;
    assert_eq!(set["code"], 200, "{set}");
    c.drain();
    let carol = c.user.clone();
    assert_eq!(a.sub(&carol).await["code"], 403);
    let told = c.collect(200).await;
    assert!(told.is_empty(), "{told:?}");
}

#[tokio::test]
async fn hostile_topic_names_and_edge_values_get_clear_errors() {
    let svc = service();
    let mut c = Client::connect(&svc);
    c.signup("n-user", "secret1").await;
    for bad in [
        "grp",
        "grp a",
        "grp\u{202e}x",
        "grp/../x",
        &format!("grp{}", "a".repeat(200)),
        &format!("new{}", "x".repeat(100)),
    ] {
        let ctrl = c.sub(bad).await;
        assert_eq!(ctrl["code"], 404, "{bad:?}: {ctrl}");
    }
    let grp = c.new_group("edges").await;
    // Seq bounds at the edge of i64 are refused or answered, never a panic.
    let max = i64::MAX;
    let (get, _) = c.req("get", json!({ "topic": grp, "what": "data", "data": { "ranges": [{ "low": max }] } })).await;
    assert_eq!(get["code"], 204, "{get}");
    let (del, _) = c.req("del", json!({ "topic": grp, "what": "msg", "delseq": [{ "low": max }] })).await;
    assert_eq!(del["code"], 400, "{del}");
}

#[tokio::test]
async fn a_session_the_server_closed_handles_nothing_more() {
    let svc = service();
    let mut victim = Client::connect(&svc);
    victim.signup("r-victim", "secret1").await;
    let grp = victim.new_group("mine").await;
    let user = UserId::parse(&victim.user).unwrap();
    // An admin disables the account: the session is told and closed...
    svc.set_account_state(palaver_core::TenantId::DEFAULT, user, false).await.unwrap();
    let frames = victim.collect(200).await;
    assert!(frames.iter().any(|f| f["ctrl"]["code"] == 205), "{frames:?}");
    // ...and a client that ignores that gets no further: no publish, no password change, no reply at all.
    let frames = victim.send(json!({ "pub": { "id": "p", "topic": grp, "content": "still here" } })).await;
    assert!(frames.is_empty(), "{frames:?}");
    let secret = harness::basic("r-victim", "taken-over");
    let frames = victim.send(json!({ "acc": { "id": "a", "user": "me", "scheme": "basic", "secret": secret } })).await;
    assert!(frames.is_empty(), "{frames:?}");
    assert_eq!(svc.metrics().refused_count("after_close"), 2);
    svc.set_account_state(palaver_core::TenantId::DEFAULT, user, true).await.unwrap();
    let mut again = Client::connect(&svc);
    assert_eq!(again.login("r-victim", "secret1").await["code"], 200, "the password was not changed");
    let (ctrl, frames) = again.req("sub", json!({ "topic": grp, "get": { "what": "data" } })).await;
    assert_eq!(ctrl["code"], 200);
    assert!(harness::data(&frames).is_empty(), "nothing was published: {frames:?}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}
