//! One-to-one calls over the protocol, in process: the call message and its record, `{note what:"call"}`
//! relayed to the other party as `{info topic:"me" src what:"call"}`, the head rewritten by replacement
//! messages, decline, ring timeout, accept after the timeout, busy, two callee devices, a dropped caller, and
//! caller and callee on different nodes.

mod harness;

use harness::{Client, basic, cluster, data, of, service_with};
use palaver_service::{CallConfig, IceServer, Service, ServiceConfig};
use serde_json::{Value, json};

fn cfg(ring_timeout_ms: u64) -> ServiceConfig {
    ServiceConfig { calls: CallConfig { ring_timeout_ms, ..CallConfig::default() }, ..ServiceConfig::default() }
}

/// Logs `login` in on `svc` on a new connection.
async fn device(svc: &Service, login: &str) -> Client {
    let mut c = Client::connect(svc);
    c.hi().await;
    let (ctrl, _) = c.req("login", json!({ "scheme": "basic", "secret": basic(login, "secret123") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    c.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    c
}

/// Alice and Bob, each attached to their P2P topic (named by the peer) and to `me`.
async fn pair(a_svc: &Service, b_svc: &Service) -> (Client, Client) {
    pair_named(a_svc, b_svc).await.0
}

/// [`pair`], with the two logins.
async fn pair_named(a_svc: &Service, b_svc: &Service) -> ((Client, Client), (String, String)) {
    let logins = (format!("alice{}", rand_tag()), format!("bob{}", rand_tag()));
    let mut a = Client::connect(a_svc);
    a.signup(&logins.0, "secret123").await;
    let mut b = Client::connect(b_svc);
    b.signup(&logins.1, "secret123").await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    assert_eq!(a.sub(&bob).await["code"], 200);
    assert_eq!(b.sub(&alice).await["code"], 200);
    assert_eq!(a.sub("me").await["code"], 200);
    assert_eq!(b.sub("me").await["code"], 200);
    a.collect(30).await;
    b.collect(30).await;
    ((a, b), logins)
}

fn rand_tag() -> String {
    format!("{:06x}", rand::random::<u32>() & 0xff_ffff)
}

/// Dials: `{pub head:{webrtc:"started"}}`, returning the call's seq.
async fn dial(a: &mut Client, peer: &str) -> i64 {
    let head = json!({ "webrtc": "started", "mime": "application/x-tinode-webrtc", "aonly": true });
    let (ack, _) = a.req("pub", json!({ "topic": peer, "head": head, "content": "" })).await;
    assert_eq!(ack["code"], 202, "{ack}");
    ack["params"]["seq"].as_i64().unwrap()
}

async fn note(c: &mut Client, topic: &str, seq: i64, event: &str, payload: Option<Value>) -> Vec<Value> {
    let mut n = json!({ "topic": topic, "what": "call", "seq": seq, "event": event });
    if let Some(p) = payload {
        n["payload"] = p;
    }
    c.send(json!({ "note": n })).await
}

/// Waits for `{info what:"call" event}` on `me`.
async fn call_info(c: &mut Client, event: &str) -> Value {
    let ev = event.to_owned();
    let (f, _) =
        c.wait_for(&format!("call {event}"), move |v| v["info"]["what"] == "call" && v["info"]["event"] == ev).await;
    f["info"].clone()
}

/// Waits for the replacement `{data}` whose `head.webrtc` is `state`.
async fn replaced(c: &mut Client, state: &str) -> Value {
    let st = state.to_owned();
    let (f, _) = c.wait_for(&format!("webrtc {state}"), move |v| v["data"]["head"]["webrtc"] == st).await;
    f["data"].clone()
}

/// Waits until every call `{info}` event of `infos` and every replacement of `states` arrived, in whatever
/// order (they travel separately between nodes); returns the replacement `{data}` frames in `states` order.
async fn expect(c: &mut Client, infos: &[&str], states: &[&str]) -> Vec<Value> {
    let (mut infos, mut found): (Vec<&str>, Vec<Option<Value>>) = (infos.to_vec(), vec![None; states.len()]);
    while !infos.is_empty() || found.iter().any(Option::is_none) {
        let (f, _) = c
            .wait_for("call frames", |v| v["info"]["what"] == "call" || v["data"]["head"].get("webrtc").is_some())
            .await;
        if let Some(ev) = f["info"]["event"].as_str() {
            infos.retain(|i| *i != ev);
        } else if let Some(i) = states.iter().position(|st| f["data"]["head"]["webrtc"] == *st) {
            found[i] = Some(f["data"].clone());
        }
    }
    found.into_iter().map(Option::unwrap).collect()
}

/// The newest `head.webrtc` the history shows for the call `seq` (the original or its latest replacement).
async fn final_state(c: &mut Client, topic: &str, seq: i64) -> (String, Option<i64>) {
    let (_, frames) = c.req("get", json!({ "topic": topic, "what": "data" })).await;
    let mut msgs = data(&frames);
    msgs.sort_by_key(|m| m["seq"].as_i64());
    let last = msgs
        .iter()
        .rev()
        .find(|m| m["seq"] == seq || m["head"]["replace"] == format!(":{seq}"))
        .expect("the call message in history");
    (last["head"]["webrtc"].as_str().unwrap().to_owned(), last["head"]["webrtc-duration"].as_i64())
}

#[tokio::test]
async fn ring_accept_signal_hang_up_leaves_the_final_head_in_both_histories() {
    let mut cfg = cfg(30_000);
    cfg.calls.ice_servers =
        vec![IceServer { urls: vec!["turn:t:3478".into()], secret: "s3".into(), ..Default::default() }];
    let svc = service_with(cfg);
    let mut probe = Client::connect(&svc);
    let hi = probe.hi().await;
    assert_eq!(hi["params"]["callTimeout"], 30);
    let turn = &hi["params"]["iceServers"][0];
    let (user, cred) = (turn["username"].as_str().unwrap(), turn["credential"].as_str().unwrap());
    let expiry: u64 = user.split(':').next().unwrap().parse().unwrap();
    assert_eq!(palaver_service::turn_credentials("s3", &user[user.find(':').unwrap() + 1..], expiry).1, cred);

    let (mut a, mut b) = pair(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    let invite = call_info(&mut b, "invite").await;
    assert_eq!(
        (invite["topic"].as_str(), invite["src"].as_str(), invite["seq"].as_i64()),
        (Some("me"), Some(alice.as_str()), Some(seq))
    );
    assert_eq!(invite["from"], alice.as_str());
    // Signalling between the two sessions in the call goes on the P2P topic as each names it, where the
    // clients' call panels listen (Tinode's routing); the invite went on `me`.
    note(&mut b, &alice, seq, "ringing", None).await;
    let ringing = call_info(&mut a, "ringing").await;
    assert_eq!((ringing["topic"].as_str(), ringing.get("src")), (Some(bob.as_str()), None), "{ringing}");
    assert_eq!(ringing["from"], bob.as_str());
    let own = note(&mut b, &alice, seq, "accept", None).await;
    assert!(data(&own).iter().any(|d| d["head"]["webrtc"] == "accepted"), "the accepting session's history: {own:?}");
    let accepted = expect(&mut a, &["accept"], &["accepted"]).await.remove(0);
    assert_eq!(accepted["head"]["replace"], format!(":{seq}"));
    assert_eq!(accepted["head"]["aonly"], true);
    assert_eq!(accepted["head"]["mime"], "application/x-tinode-webrtc", "the original's mime");
    note(&mut a, &bob, seq, "offer", Some(json!({ "type": "offer", "sdp": "v=0 a" }))).await;
    let offer = call_info(&mut b, "offer").await;
    assert_eq!((offer["topic"].as_str(), offer["payload"]["sdp"].as_str()), (Some(alice.as_str()), Some("v=0 a")));
    note(&mut b, &alice, seq, "answer", Some(json!({ "type": "answer", "sdp": "v=0 b" }))).await;
    assert_eq!(call_info(&mut a, "answer").await["payload"]["sdp"], "v=0 b");
    note(&mut a, &bob, seq, "ice-candidate", Some(json!({ "candidate": "c1" }))).await;
    assert_eq!(call_info(&mut b, "ice-candidate").await["payload"]["candidate"], "c1");
    note(&mut b, &alice, seq, "ice-candidate", Some(json!({ "candidate": "c2" }))).await;
    assert_eq!(call_info(&mut a, "ice-candidate").await["payload"]["candidate"], "c2");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    note(&mut a, &bob, seq, "hang-up", None).await;
    // The final head is stored before the parties are told, so the replacement comes first.
    let fin = replaced(&mut b, "finished").await;
    let (hang_up, _) = b.wait_for("hang-up", |v| v["info"]["event"] == "hang-up").await;
    assert_eq!(hang_up["info"]["topic"], alice.as_str(), "attached: on the topic");
    assert!(fin["head"]["webrtc-duration"].as_i64().unwrap() >= 20, "{fin}");
    for (c, topic) in [(&mut a, &bob), (&mut b, &alice)] {
        let (state, duration) = final_state(c, topic, seq).await;
        assert_eq!(state, "finished");
        assert!(duration.unwrap() >= 20);
    }
    // A late hang-up changes nothing and is counted as refused.
    note(&mut b, &alice, seq, "hang-up", None).await;
    let metrics = svc.render_metrics();
    assert!(metrics.contains("palaver_call_transitions_total{state=\"finished\"} 1"), "{metrics}");
    assert!(metrics.contains("palaver_call_transition_refused_total{event=\"hang-up\"} 1"), "{metrics}");
}

#[tokio::test]
async fn callee_hang_up_while_ringing_declines() {
    let svc = service_with(cfg(30_000));
    let (mut a, mut b) = pair(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    call_info(&mut b, "invite").await;
    note(&mut b, &alice, seq, "hang-up", None).await;
    let d = expect(&mut a, &["hang-up"], &["declined"]).await.remove(0);
    assert!(d["head"].get("webrtc-duration").is_none(), "a call never accepted has no duration: {d}");
    assert_eq!(final_state(&mut b, &alice, seq).await.0, "declined");
    // The callee cannot accept a declined call.
    note(&mut b, &alice, seq, "accept", None).await;
    assert!(of(&a.collect(100).await, "info").iter().all(|i| i["event"] != "accept"));
}

#[tokio::test]
async fn unanswered_call_is_missed_and_a_late_accept_is_refused() {
    let svc = service_with(cfg(300));
    let (mut a, mut b) = pair(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    call_info(&mut b, "invite").await;
    call_info(&mut a, "hang-up").await;
    replaced(&mut b, "missed").await;
    note(&mut b, &alice, seq, "accept", None).await;
    assert!(of(&a.collect(100).await, "info").iter().all(|i| i["event"] != "accept"), "accept after missed");
    assert_eq!(final_state(&mut a, &bob, seq).await.0, "missed");
    let metrics = svc.render_metrics();
    assert!(metrics.contains("palaver_call_transitions_total{state=\"missed\"} 1"), "{metrics}");
    assert!(metrics.contains("palaver_call_transitions_total{state=\"accepted\"} 0"), "{metrics}");
    assert!(metrics.contains("palaver_call_transition_refused_total{event=\"accept\"} 1"), "{metrics}");
}

#[tokio::test]
async fn accept_just_before_the_timeout_wins_and_the_timer_changes_nothing() {
    let svc = service_with(cfg(1_000));
    let (mut a, mut b) = pair(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    tokio::time::sleep(std::time::Duration::from_millis(950)).await;
    note(&mut b, &alice, seq, "accept", None).await;
    call_info(&mut a, "accept").await;
    // The timer fires meanwhile: refused, the call stays accepted.
    let later = a.collect(400).await;
    assert!(later.iter().all(|f| f["data"]["head"]["webrtc"] != "missed"), "{later:?}");
    assert_eq!(final_state(&mut a, &bob, seq).await.0, "accepted");
    assert!(svc.render_metrics().contains("palaver_call_transition_refused_total{event=\"timeout\"} 1"));
}

#[tokio::test]
async fn a_callee_in_a_call_is_busy() {
    let svc = service_with(cfg(30_000));
    let (mut a, b) = pair(&svc, &svc).await;
    let bob = b.user.clone();
    dial(&mut a, &bob).await;
    let mut c = Client::connect(&svc);
    c.signup(&format!("carol{}", rand_tag()), "secret123").await;
    assert_eq!(c.sub(&bob).await["code"], 200);
    let head = json!({ "webrtc": "started" });
    let (ctrl, _) = c.req("pub", json!({ "topic": bob, "head": head, "content": "" })).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["text"].as_str()), (Some(486), Some("busy here")), "{ctrl}");
    // Only the server writes the other states.
    let (ctrl, _) = c.req("pub", json!({ "topic": bob, "head": { "webrtc": "accepted" }, "content": "" })).await;
    assert_eq!(ctrl["code"], 400, "{ctrl}");
}

#[tokio::test]
async fn accept_on_one_device_stops_the_others_and_signalling_reaches_only_it() {
    let svc = service_with(cfg(30_000));
    let ((mut a, mut b1), (_, login)) = pair_named(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b1.user.clone());
    let mut b2 = device(&svc, &login).await;
    assert_eq!(b2.sub("me").await["code"], 200);
    let seq = dial(&mut a, &bob).await;
    call_info(&mut b1, "invite").await;
    call_info(&mut b2, "invite").await;
    note(&mut b1, &alice, seq, "accept", None).await;
    call_info(&mut a, "accept").await;
    call_info(&mut b2, "accept").await;
    note(&mut a, &bob, seq, "offer", Some(json!({ "sdp": "x" }))).await;
    call_info(&mut b1, "offer").await;
    assert!(of(&b2.collect(100).await, "info").iter().all(|i| i["event"] != "offer"), "the idle device");
    // The other device cannot take over the call's signalling (the note is dropped).
    note(&mut b2, &alice, seq, "answer", Some(json!({ "sdp": "y" }))).await;
    assert!(of(&a.collect(100).await, "info").iter().all(|i| i["event"] != "answer"), "answer from the idle device");
}

#[tokio::test]
async fn caller_dropping_ends_the_call_as_disconnected() {
    let svc = service_with(cfg(30_000));
    let ((mut a, mut b), (alice_login, _)) = pair_named(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    note(&mut b, &alice, seq, "accept", None).await;
    call_info(&mut a, "accept").await;
    a.close().await;
    expect(&mut b, &["hang-up"], &["disconnected"]).await;
    assert_eq!(final_state(&mut b, &alice, seq).await.0, "disconnected");
    // Both are free again.
    let mut a2 = device(&svc, &alice_login).await;
    assert_eq!(a2.sub(&bob).await["code"], 200);
    dial(&mut a2, &bob).await;
}

#[tokio::test]
async fn caller_and_callee_on_different_nodes() {
    let nodes = cluster(2, |c| c.calls.ring_timeout_ms = 30_000);
    let (mut a, mut b) = pair(&nodes[0], &nodes[1]).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    call_info(&mut b, "invite").await;
    note(&mut b, &alice, seq, "ringing", None).await;
    call_info(&mut a, "ringing").await;
    note(&mut b, &alice, seq, "accept", None).await;
    expect(&mut a, &["accept"], &["accepted"]).await;
    note(&mut a, &bob, seq, "offer", Some(json!({ "sdp": "o" }))).await;
    assert_eq!(call_info(&mut b, "offer").await["payload"]["sdp"], "o");
    note(&mut b, &alice, seq, "answer", Some(json!({ "sdp": "a" }))).await;
    assert_eq!(call_info(&mut a, "answer").await["payload"]["sdp"], "a");
    note(&mut b, &alice, seq, "hang-up", None).await;
    expect(&mut a, &["hang-up"], &["finished"]).await;
    assert_eq!(final_state(&mut a, &bob, seq).await.0, "finished");
    assert_eq!(final_state(&mut b, &alice, seq).await.0, "finished");
}

#[tokio::test]
async fn calls_need_a_p2p_topic_and_a_party() {
    let svc = service_with(cfg(30_000));
    let (mut a, mut b) = pair(&svc, &svc).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    call_info(&mut b, "invite").await;
    // The caller cannot accept its own call; a stranger cannot touch it (both notes are dropped).
    note(&mut a, &bob, seq, "accept", None).await;
    let mut eve = Client::connect(&svc);
    eve.signup(&format!("eve{}", rand_tag()), "secret123").await;
    note(&mut eve, &alice, seq, "hang-up", None).await;
    note(&mut eve, &bob, seq, "hang-up", None).await;
    assert!(of(&b.collect(100).await, "info").is_empty(), "nothing reached the callee");
    assert_eq!(final_state(&mut a, &bob, seq).await.0, "started");
    let grp = a.new_group("g").await;
    let (ctrl, _) = a.req("pub", json!({ "topic": grp, "head": { "webrtc": "started" }, "content": "" })).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");
}

#[tokio::test]
async fn a_call_with_a_party_on_a_dead_node_is_ended_by_the_sweep() {
    let nodes = cluster(2, |c| c.calls.ring_timeout_ms = 30_000);
    let (mut a, mut b) = pair(&nodes[0], &nodes[1]).await;
    let (alice, bob) = (a.user.clone(), b.user.clone());
    let seq = dial(&mut a, &bob).await;
    note(&mut b, &alice, seq, "accept", None).await;
    expect(&mut a, &["accept"], &["accepted"]).await;
    let tenant = palaver_core::TenantId::DEFAULT;
    // While both nodes are live, the sweep leaves the call alone, on either node.
    let both = ["node0".to_owned(), "node1".to_owned()];
    assert_eq!(nodes[1].sweep_calls(tenant, Some(&both)).await.unwrap(), 0);
    assert_eq!(nodes[0].sweep_calls(tenant, Some(&both)).await.unwrap(), 0);
    // node0 stops heartbeating (its claim expires): node1's sweep ends the call it held the caller of.
    let only_node1 = ["node1".to_owned()];
    assert_eq!(nodes[1].sweep_calls(tenant, Some(&only_node1)).await.unwrap(), 1);
    expect(&mut b, &["hang-up"], &["disconnected"]).await;
    assert_eq!(final_state(&mut b, &alice, seq).await.0, "disconnected");
    // A second sweep (or another node's) finds nothing left to end.
    assert_eq!(nodes[1].sweep_calls(tenant, Some(&only_node1)).await.unwrap(), 0);
    // Bob is free again.
    let mut c = Client::connect(&nodes[1]);
    c.signup(&format!("carol{}", rand_tag()), "secret123").await;
    assert_eq!(c.sub(&bob).await["code"], 200);
    dial(&mut c, &bob).await;
}

#[tokio::test]
async fn two_calls_dialled_to_one_callee_at_once_ring_once() {
    for _ in 0..5 {
        let svc = service_with(cfg(30_000));
        let mut b = Client::connect(&svc);
        b.signup(&format!("bob{}", rand_tag()), "secret123").await;
        let bob = b.user.clone();
        let mut callers = Vec::new();
        for _ in 0..2 {
            let mut c = Client::connect(&svc);
            c.signup(&format!("caller{}", rand_tag()), "secret123").await;
            assert_eq!(c.sub(&bob).await["code"], 200);
            callers.push(c);
        }
        let head = json!({ "webrtc": "started" });
        let dials = callers.into_iter().map(|mut c| {
            let (bob, head) = (bob.clone(), head.clone());
            tokio::spawn(async move {
                let (ctrl, _) = c.req("pub", json!({ "topic": bob, "head": head, "content": "" })).await;
                (c, ctrl)
            })
        });
        let mut results = Vec::new();
        for d in dials.collect::<Vec<_>>() {
            results.push(d.await.unwrap());
        }
        // One call rings; the other is refused with 486 before its message is stored, or, when both passed
        // the check at once, stored and at once replaced with `busy`.
        let mut ringing = 0;
        for (mut c, ctrl) in results {
            match ctrl["code"].as_i64() {
                Some(486) => {}
                Some(202) => {
                    let seq = ctrl["params"]["seq"].as_i64().unwrap();
                    let state = final_state(&mut c, &bob, seq).await.0;
                    match state.as_str() {
                        "started" => ringing += 1,
                        "busy" => {}
                        other => panic!("the second call is {other}"),
                    }
                }
                _ => panic!("{ctrl}"),
            }
        }
        assert_eq!(ringing, 1);
    }
}
