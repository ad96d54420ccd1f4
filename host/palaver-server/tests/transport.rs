//! The server over real sockets on 127.0.0.1:0: API keys, frame-size and rate limits, the keep-alive probe,
//! long polling, draining with ctrl 205, and data surviving a restart on the same data directory.

mod common;

use common::{Client, KEY, http, start};
use serde_json::{Value, json};

#[tokio::test]
async fn a_bad_api_key_gets_403_and_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let addr = node.addr();
    let err =
        tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels?apikey=AQEAAAABAAD_rAp4DJh05a1HAwFT3A6L"))
            .await
            .unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");
    assert!(tokio_tungstenite::connect_async(format!("ws://{addr}/v0/channels")).await.is_err(), "no key at all");
    let (status, body) = http(addr, "GET", "/v0/channels/lp?apikey=nope", "").await;
    assert_eq!(status, 403);
    assert!(body.contains("valid API key required"), "{body}");
    node.shutdown().await;
}

#[tokio::test]
async fn oversized_frames_get_413_and_the_session_lives_on() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_LIMITS__MAX_MESSAGE_SIZE", "1024")]).await;
    let mut c = Client::connect(node.addr()).await;
    let hi = c.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(hi["params"]["maxMessageSize"], 1024);
    let big = json!({ "pub": { "id": "big", "topic": "grpX", "content": "x".repeat(2000) } }).to_string();
    c.send_raw(big).await;
    let f = c.next().await.unwrap();
    assert_eq!(f["ctrl"]["code"], 413);
    assert_eq!(f["ctrl"]["id"], "big");
    let again = c.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(again["code"], 200, "the session survives a refused frame");
    // Beyond the transport's hard limit the connection is closed instead.
    c.send_raw("y".repeat(200_000)).await;
    assert!(c.next().await.is_none());
    node.shutdown().await;
}

#[tokio::test]
async fn a_flood_gets_429_and_other_sessions_are_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let node =
        start(dir.path(), &[("PALAVER_LIMITS__RATE_PER_SECOND", "1"), ("PALAVER_LIMITS__RATE_BURST", "5")]).await;
    let mut flood = Client::connect(node.addr()).await;
    for i in 0..20 {
        flood.send_raw(json!({ "hi": { "id": format!("f{i}"), "ver": "0.25.3" } }).to_string()).await;
    }
    let mut codes = Vec::new();
    for _ in 0..20 {
        codes.push(flood.next().await.unwrap()["ctrl"]["code"].as_i64().unwrap());
    }
    assert_eq!(codes.iter().filter(|c| **c == 429).count(), 15, "{codes:?}");
    let mut other = Client::connect(node.addr()).await;
    assert_eq!(other.req("hi", json!({ "ver": "0.25.3" })).await["code"], 201);
    // Garbage from one session does not disturb another.
    flood.send_raw("{\"garbage".into()).await;
    other.signup("untouched").await;
    node.shutdown().await;
}

#[tokio::test]
async fn the_probe_and_out_of_order_frames() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let mut c = Client::connect(node.addr()).await;
    c.send_raw("1".into()).await;
    assert_eq!(c.next().await.unwrap(), json!(0), "the probe answer is the bare text 0");
    let early = c.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(early["code"], 409, "sub before hi");
    c.req("hi", json!({ "ver": "0.25.3" })).await;
    let unauth = c.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(unauth["code"], 401, "sub before login");
    c.send_raw("[]".into()).await;
    assert_eq!(c.next().await.unwrap()["ctrl"]["code"], 400);
    node.shutdown().await;
}

#[tokio::test]
async fn long_polling_creates_a_session_and_carries_messages() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let addr = node.addr();
    let (status, body) = http(addr, "POST", &format!("/v0/channels/lp?apikey={KEY}"), "").await;
    assert_eq!(status, 201);
    let v: Value = serde_json::from_str(&body).unwrap();
    let sid = v["ctrl"]["params"]["sid"].as_str().unwrap().to_owned();
    let path = format!("/v0/channels/lp?apikey={KEY}&sid={sid}");
    let (status, body) = http(addr, "POST", &path, r#"{"hi":{"id":"1","ver":"0.25.3"}}"#).await;
    assert_eq!((status, body.as_str()), (200, ""));
    let (status, body) = http(addr, "GET", &path, "").await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ctrl"]["id"], "1");
    assert_eq!(v["ctrl"]["code"], 200, "the hi reply is 200 over long polling");
    let (status, _) = http(addr, "GET", &format!("/v0/channels/lp?apikey={KEY}&sid=nosuch"), "").await;
    assert_eq!(status, 403);
    let (status, metrics) = http(addr, "GET", "/metrics", "").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("palaver_requests_total{kind=\"hi\"} 1"), "{metrics}");
    assert!(metrics.contains("palaver_sessions 1"), "{metrics}");
    node.shutdown().await;
}

#[tokio::test]
async fn draining_sends_205_then_closes() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let addr = node.addr();
    let mut c = Client::connect(addr).await;
    c.signup("drainee").await;
    let (status, body) = http(addr, "GET", "/readyz", "").await;
    assert_eq!(status, 200);
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready, json!({ "status": "ready", "checks": { "database": { "ok": true, "required": true } } }));
    let shutdown = tokio::spawn(node.shutdown());
    let f = c.next().await.unwrap();
    assert_eq!(f["ctrl"]["code"], 205);
    assert_eq!(f["ctrl"]["text"], "server shutdown");
    assert!(c.next().await.is_none(), "closed after the notice");
    shutdown.await.unwrap();
}

#[tokio::test]
async fn messages_subscriptions_and_tokens_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[]).await;
    let mut c = Client::connect(node.addr()).await;
    let (_, token) = c.signup("survivor").await;
    let ctrl = c.req("sub", json!({ "topic": "new1", "set": { "desc": { "public": { "fn": "Durable" } } } })).await;
    let grp = ctrl["topic"].as_str().unwrap().to_owned();
    for i in 1..=3 {
        let ctrl = c.req("pub", json!({ "topic": grp, "content": format!("m{i}") })).await;
        assert_eq!(ctrl["params"]["seq"], i);
    }
    drop(c);
    node.shutdown().await;

    let node = start(dir.path(), &[]).await;
    let mut c = Client::connect(node.addr()).await;
    c.req("hi", json!({ "ver": "0.25.3" })).await;
    assert_eq!(c.req("login", json!({ "scheme": "token", "secret": token })).await["code"], 200);
    c.n += 1;
    let id = format!("r{}", c.n);
    c.send_raw(json!({ "sub": { "id": id, "topic": grp, "get": { "what": "data sub" } } }).to_string()).await;
    let mut seqs = Vec::new();
    let mut subs = 0;
    while let Some(f) = c.next().await {
        if let Some(s) = f["data"]["seq"].as_i64() {
            seqs.push(s);
        }
        if let Some(list) = f["meta"]["sub"].as_array() {
            subs = list.len();
        }
        if f["ctrl"]["code"] == 208 {
            break;
        }
    }
    assert_eq!(seqs, vec![3, 2, 1]);
    assert_eq!(subs, 1);
    let ctrl = c.req("pub", json!({ "topic": grp, "content": "after restart" })).await;
    assert_eq!(ctrl["params"]["seq"], 4, "seq continues above what was stored");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_publishers_on_sqlite_get_contiguous_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), &[("PALAVER_LIMITS__RATE_PER_SECOND", "0")]).await;
    let addr = node.addr();
    let mut owner = Client::connect(addr).await;
    owner.signup("seqowner").await;
    let ctrl = owner.req("sub", json!({ "topic": "new1" })).await;
    let grp = ctrl["topic"].as_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for p in 0..8 {
        let grp = grp.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            c.signup(&format!("seqpub{p}")).await;
            assert_eq!(c.req("sub", json!({ "topic": grp })).await["code"], 200);
            let mut seqs = Vec::new();
            for i in 0..25 {
                let ctrl = c.req("pub", json!({ "topic": grp, "content": { "p": p, "i": i } })).await;
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
    node.shutdown().await;
}
