//! Calls through a real node over WebSockets, on the embedded SQLite store: `[calls]` from the environment,
//! the `{hi}` call parameters, a call rung, accepted, signalled and hung up with its final head in history, a
//! missed call, 486 busy, and the call counters on `/metrics`.

mod common;

use common::{Client, http, sample, start};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Reads frames until one matches `pred` (within five seconds); the others are skipped.
async fn until(c: &mut Client, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Some(f) = c.next().await
            && pred(&f)
        {
            return f;
        }
    }
    panic!("no {what}");
}

fn call_event(event: &'static str) -> impl Fn(&Value) -> bool {
    move |f| f["info"]["what"] == "call" && f["info"]["event"] == event
}

async fn note(c: &mut Client, topic: &str, seq: i64, event: &str) {
    let n =
        json!({ "note": { "topic": topic, "what": "call", "seq": seq, "event": event, "payload": { "x": event } } });
    c.send_raw(n.to_string()).await;
}

async fn dial(c: &mut Client, peer: &str) -> Value {
    c.req("pub", json!({ "topic": peer, "head": { "webrtc": "started" }, "content": "call" })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_websockets_on_sqlite() {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[("PALAVER_CALLS__RING_TIMEOUT_MS", "1500")]).await;
    let mut a = Client::connect(node.addr()).await;
    let hi = a.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(hi["params"]["callTimeout"], 1, "{hi}");
    assert_eq!(hi["params"]["iceServers"], json!([]));
    let (alice, _) = a.signup("callalice").await;
    let mut b = Client::connect(node.addr()).await;
    let (bob, _) = b.signup("callbob").await;
    assert_eq!(a.req("sub", json!({ "topic": bob })).await["code"], 200);
    assert_eq!(b.req("sub", json!({ "topic": alice })).await["code"], 200);

    let ack = dial(&mut a, &bob).await;
    assert_eq!(ack["code"], 202, "{ack}");
    let seq = ack["params"]["seq"].as_i64().unwrap();
    let invite = until(&mut b, "invite", call_event("invite")).await;
    assert_eq!((invite["info"]["src"].as_str(), invite["info"]["seq"].as_i64()), (Some(alice.as_str()), Some(seq)));
    note(&mut b, &alice, seq, "accept").await;
    until(&mut a, "accept", call_event("accept")).await;
    note(&mut a, &bob, seq, "offer").await;
    assert_eq!(until(&mut b, "offer", call_event("offer")).await["info"]["payload"]["x"], "offer");
    note(&mut b, &alice, seq, "answer").await;
    until(&mut a, "answer", call_event("answer")).await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    note(&mut a, &bob, seq, "hang-up").await;
    until(&mut b, "hang-up", call_event("hang-up")).await;

    // History: the call message, then its replacements, the last one final with a duration.
    b.send_raw(json!({ "get": { "id": "h", "topic": alice, "what": "data" } }).to_string()).await;
    let mut heads = Vec::new();
    while let Some(f) = b.next().await {
        if f["ctrl"]["id"] == "h" {
            break;
        }
        if f["data"]["head"]["replace"] == format!(":{seq}") {
            heads.push(f["data"]["head"].clone());
        }
    }
    let fin = heads.iter().find(|h| h["webrtc"] == "finished").expect("the finished replacement");
    assert!(fin["webrtc-duration"].as_i64().unwrap() >= 30, "{fin}");
    assert!(heads.iter().any(|h| h["webrtc"] == "accepted"));

    // A call nobody answers is missed once the ring timeout passes; meanwhile the callee is busy for others.
    let seq2 = dial(&mut a, &bob).await["params"]["seq"].as_i64().unwrap();
    let mut c = Client::connect(node.addr()).await;
    c.signup("callcarol").await;
    assert_eq!(c.req("sub", json!({ "topic": bob })).await["code"], 200);
    let busy = dial(&mut c, &bob).await;
    assert_eq!(busy["code"], 486, "{busy}");
    let missed = until(&mut b, "missed", |f| f["data"]["head"]["webrtc"] == "missed").await;
    assert_eq!(missed["data"]["head"]["replace"], format!(":{seq2}"));

    let (_, metrics) = http(node.addr(), "GET", "/metrics", "").await;
    for (state, n) in [("started", 2.0), ("accepted", 1.0), ("finished", 1.0), ("missed", 1.0), ("declined", 0.0)] {
        assert_eq!(
            sample(&metrics, &format!("palaver_call_transitions_total{{state=\"{state}\"}}")),
            Some(n),
            "{state}"
        );
    }
    assert_eq!(sample(&metrics, "palaver_call_transition_refused_total{event=\"accept\"}"), Some(0.0));
    node.shutdown().await;
}
