//! Offline push end to end on the embedded default (SQLite file, embedded queue) with the webhook provider
//! pointed at a local server that checks each request's HMAC signature: an offline user with a registered token
//! gets exactly one push per message, an attached user none, two devices one each, a replayed task nothing
//! (the dedup key), `{hi dev:"␡"}` deletes the token, a topic with P turned off pushes nothing, and a 410 from
//! the provider removes the device; and a push filter plugin (`quiet-hours`) rewrites and drops what the provider
//! gets.

mod common;

use base64::Engine;
use common::Client;
use palaver_core::ports::QueueTopic;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "webhook-test-secret";

/// A webhook receiver: records each verified body; answers 410 for tokens listed in `gone`.
#[derive(Clone, Default)]
struct Hook {
    got: Arc<Mutex<Vec<Value>>>,
    gone: Arc<Mutex<Vec<String>>>,
}

impl Hook {
    async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/push", listener.local_addr().unwrap());
        let hook = self.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let hook = hook.clone();
                tokio::spawn(async move {
                    while let Some((head, body)) = read_request(&mut s).await {
                        let status = hook.check(&head, &body);
                        let resp = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\n{{}}");
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        url
    }

    fn check(&self, head: &str, body: &[u8]) -> u16 {
        let header = |name: &str| {
            head.lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
                .unwrap_or("")
                .to_owned()
        };
        assert!(head.starts_with("POST /push HTTP/1.1"), "{head}");
        let ts: u64 = header("x-palaver-timestamp").parse().unwrap();
        assert_eq!(header("x-palaver-signature"), palaver_push::signature(SECRET.as_bytes(), ts, body));
        let v: Value = serde_json::from_slice(body).unwrap();
        let token = v["device"]["token"].as_str().unwrap().to_owned();
        self.got.lock().unwrap().push(v);
        if self.gone.lock().unwrap().contains(&token) { 410 } else { 200 }
    }

    fn to(&self, token: &str) -> Vec<Value> {
        self.got.lock().unwrap().iter().filter(|v| v["device"]["token"] == token).cloned().collect()
    }

    /// Waits until `token` got `n` pushes (failing if it gets more within a short grace).
    async fn expect(&self, token: &str, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.to(token).len() < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let got = self.to(token);
        assert_eq!(got.len(), n, "pushes to {token}: {got:?}");
        got
    }
}

async fn read_request(s: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .map(|(_, v)| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < end + len {
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[end..end + len].to_vec()))
}

/// Signs up (or logs in) `login` over a new connection whose `{hi}` names the device token `dev`.
async fn login(addr: std::net::SocketAddr, login: &str, dev: Option<&str>, create: bool) -> (Client, String) {
    let mut c = Client::connect(addr).await;
    let mut hi = json!({ "ver": "0.25.3", "platf": "android", "lang": "en" });
    if let Some(d) = dev {
        hi["dev"] = json!(d);
    }
    assert!(c.req("hi", hi).await["code"].as_i64().unwrap() < 300);
    let secret = base64::engine::general_purpose::STANDARD.encode(format!("{login}:secret1"));
    let ctrl = if create {
        c.req("acc", json!({ "user": "new", "secret": secret, "login": true })).await
    } else {
        c.req("login", json!({ "scheme": "basic", "secret": secret })).await
    };
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    (c, user)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offline_users_get_one_push_per_message() {
    let hook = Hook::default();
    let url = hook.start().await;
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(
        dir.path(),
        &[
            ("PALAVER_PUSH__ENABLED", "true"),
            ("PALAVER_PUSH__PREVIEW", "true"),
            ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10"),
            ("PALAVER_PUSH__WEBHOOK__URL", &url),
            ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
            ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
        ],
    )
    .await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "push-alice", None, true).await;
    let (bob, bob_id) = login(addr, "push-bob", Some("bob-phone"), true).await;
    drop(bob);
    // Alice opens the P2P topic with Bob; Bob is offline with one registered device.
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "hello bob" })).await["code"], 202);
    let first = hook.expect("bob-phone", 1).await;
    let data = &first[0]["data"];
    assert_eq!(data["what"], "msg");
    assert_eq!(data["seq"], "1");
    assert_eq!(data["tenant_id"], "1");
    assert_eq!(data["type"], "p2p_message");
    assert_eq!(data["content"], "hello bob", "previews are on");
    assert_eq!(first[0]["silent"], false);
    assert_eq!(first[0]["user"], bob_id);
    assert!(data["topic"].as_str().unwrap().starts_with("usr"), "Bob's name for the topic: {data}");

    // A replayed task pushes nobody again: the dedup key holds (topic, seq, uid).
    let queue = node.queue();
    let mut reader = queue.subscribe(QueueTopic::Push, "push-test-replay").await.unwrap();
    let task = reader.next().await.unwrap();
    queue.produce(task.record.clone()).await.unwrap();

    // Bob attached to the topic: no push. A second device of Bob's (attached) registers on its connection.
    let (mut bob, _) = login(addr, "push-bob", Some("bob-tablet"), false).await;
    let alice_id = first[0]["data"]["xfrom"].as_str().unwrap().to_owned();
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "you are here" })).await["code"], 202);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hook.to("bob-phone").len(), 1, "an attached user gets no push, and the replay none");
    assert!(hook.to("bob-tablet").is_empty());

    // Bob gone: both devices get one push each for the next message.
    drop(bob);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "two devices" })).await["code"], 202);
    hook.expect("bob-phone", 2).await;
    hook.expect("bob-tablet", 1).await;

    // `␡` deletes the tablet's token: the next message reaches the phone only.
    let (mut tablet, _) = login(addr, "push-bob", Some("bob-tablet"), false).await;
    assert_eq!(tablet.req("hi", json!({ "ver": "0.25.3", "dev": "\u{2421}" })).await["code"], 200);
    drop(tablet);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "phone only" })).await["code"], 202);
    hook.expect("bob-phone", 3).await;
    hook.expect("bob-tablet", 1).await;

    // Bob turns P off (mutes the conversation): nothing is pushed.
    let (mut bob, _) = login(addr, "push-bob", None, false).await;
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    let muted = bob.req("set", json!({ "topic": alice_id, "sub": { "mode": "JRWA" } })).await;
    assert_eq!(muted["code"], 200, "{muted}");
    drop(bob);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "muted" })).await["code"], 202);
    hook.expect("bob-phone", 3).await;

    // P back on; the provider says the phone's token is gone (410): the device is removed.
    let (mut bob, _) = login(addr, "push-bob", None, false).await;
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    assert_eq!(bob.req("set", json!({ "topic": alice_id, "sub": { "mode": "JRWPA" } })).await["code"], 200);
    drop(bob);
    hook.gone.lock().unwrap().push("bob-phone".into());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "gone" })).await["code"], 202);
    hook.expect("bob-phone", 4).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "after" })).await["code"], 202);
    hook.expect("bob-phone", 4).await;

    let metrics = node.service().render_metrics();
    assert!(metrics.contains("palaver_push_succeeded_total{provider=\"webhook\"} 4"), "{metrics}");
    assert!(metrics.contains("palaver_push_devices_removed_total 1"), "{metrics}");
    assert!(metrics.contains("palaver_push_deduplicated_total 1"), "{metrics}");
    node.shutdown().await;
}

const ADMIN_TOKEN: &str = "push-hook-admin-token-0123456789";

/// Puts the tenant-1 choice `body` for plugin `quiet-hours` through the admin API.
async fn quiet_hours(addr: std::net::SocketAddr, body: Value) {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let path = "/v1/admin/tenants/1/plugins/quiet-hours";
    let (status, text) = common::http_with(addr, "PUT", path, &[("Authorization", &auth)], &body.to_string()).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn push_filters_rewrite_and_drop_what_the_provider_gets() {
    let hook = Hook::default();
    let url = hook.start().await;
    let plugins = common::plugins_dir(&["quiet-hours-"]);
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(
        dir.path(),
        &[
            ("PALAVER_PUSH__ENABLED", "true"),
            ("PALAVER_PUSH__WEBHOOK__URL", &url),
            ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
            ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
            ("PALAVER_PLUGINS__DIR", &plugins.path().to_string_lossy()),
            ("PALAVER_ADMIN__TOKEN", ADMIN_TOKEN),
        ],
    )
    .await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "hook-alice", None, true).await;
    let (bob, bob_id) = login(addr, "hook-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);

    // Rewrite: a message that mentions Bob reaches him with the tenant's mention text.
    quiet_hours(addr, json!({ "enabled": true, "settings": { "mention_body": "You were mentioned" } })).await;
    let mention = json!({ "txt": "hi bob", "ent": [{ "tp": "MN", "data": { "val": bob_id } }],
        "fmt": [{ "at": 3, "len": 3, "key": 0 }] });
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": mention })).await["code"], 202);
    let got = hook.expect("bob-phone", 1).await;
    assert_eq!(got[0]["body"], "You were mentioned", "{}", got[0]);
    assert_eq!(got[0]["data"]["seq"], "1", "the locating fields are the host's");
    // Keep: no mention, no quiet hours, the push as built.
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "plain" })).await["code"], 202);
    let got = hook.expect("bob-phone", 2).await;
    assert_eq!(got[1]["body"], "New message");

    // Drop: Bob's own quiet hours, around the current UTC minute, with `drop`.
    let now_min = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 60) % 1440;
    let hhmm = |m: u64| format!("{:02}:{:02}", (m % 1440) / 60, m % 60);
    let window = json!({ "start": hhmm(now_min + 1440 - 60), "end": hhmm(now_min + 60) });
    let settings = json!({ "users": { bob_id.clone(): window }, "during_quiet": "drop" });
    quiet_hours(addr, json!({ "settings": settings })).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "at night" })).await["code"], 202);
    let dropped = "palaver_push_filtered_total{decision=\"drop\"}";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while common::sample(&node.service().render_metrics(), dropped) != Some(1.0) {
        assert!(tokio::time::Instant::now() < deadline, "the filter never dropped the push");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hook.expect("bob-phone", 2).await;

    let metrics = node.service().render_metrics();
    let count = |series: &str| common::sample(&metrics, series).unwrap_or(-1.0);
    assert_eq!(count("palaver_push_filtered_total{decision=\"rewrite\"}"), 1.0, "{metrics}");
    assert_eq!(count("palaver_push_filtered_total{decision=\"keep\"}"), 1.0);
    assert_eq!(count("palaver_push_filtered_total{decision=\"drop\"}"), 1.0);
    assert_eq!(count("palaver_plugin_calls_total{plugin=\"quiet-hours\",hook=\"before-push\"}"), 3.0);
    node.shutdown().await;
}
