//! Offline push end to end on the embedded default (SQLite file, embedded queue) with the webhook provider
//! pointed at a local server that checks each request's HMAC signature: an offline user with a registered token
//! gets exactly one push per message, an attached user none, two devices one each, a replayed task nothing
//! (the dedup key), `{hi dev:"␡"}` deletes the token, a topic with P turned off pushes nothing, and a 410 from
//! the provider removes the device. Read receipts and subscription changes push silently; a held message
//! pushes only once released; and a push filter plugin (`quiet-hours`) rewrites and drops what the provider
//! gets. A call rings an offline callee's phone with an alert, a missed call alerts too, and the call's progress
//! (accepted, ended) reaches it silently. A node with `push.worker` off makes tasks that wait for a worker. A
//! provider that keeps failing leaves one dead letter per push.

mod common;

use common::webhook::{Hook, SECRET, login};
use common::{http_with, plugins_dir};
use palaver_core::ports::QueueTopic;
use palaver_service::backbone::push::push_tasks;
use serde_json::{Value, json};
use std::time::Duration;

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
    let first = hook.expect_msgs("bob-phone", 1).await;
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
    // The record carries the topic's tasks drained with the first message's (Alice's subscription's silent push
    // to Bob, say): each pushes Bob, so each is stopped once.
    let replayed = push_tasks(&task.record.payload).unwrap().len();
    assert!(replayed >= 1);

    // Bob attached to the topic: no push. A second device of Bob's (attached) registers on its connection.
    let (mut bob, _) = login(addr, "push-bob", Some("bob-tablet"), false).await;
    let alice_id = first[0]["data"]["xfrom"].as_str().unwrap().to_owned();
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "you are here" })).await["code"], 202);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hook.msgs("bob-phone").len(), 1, "an attached user gets no push, and the replay none");
    assert!(hook.msgs("bob-tablet").is_empty());

    // Bob gone: both devices get one push each for the next message.
    drop(bob);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "two devices" })).await["code"], 202);
    hook.expect_msgs("bob-phone", 2).await;
    hook.expect_msgs("bob-tablet", 1).await;

    // `␡` deletes the tablet's token: the next message reaches the phone only.
    let (mut tablet, _) = login(addr, "push-bob", Some("bob-tablet"), false).await;
    assert_eq!(tablet.req("hi", json!({ "ver": "0.25.3", "dev": "\u{2421}" })).await["code"], 200);
    drop(tablet);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "phone only" })).await["code"], 202);
    hook.expect_msgs("bob-phone", 3).await;
    hook.expect_msgs("bob-tablet", 1).await;

    // Bob turns P off (mutes the conversation): nothing is pushed.
    let (mut bob, _) = login(addr, "push-bob", None, false).await;
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    let muted = bob.req("set", json!({ "topic": alice_id, "sub": { "mode": "JRWA" } })).await;
    assert_eq!(muted["code"], 200, "{muted}");
    drop(bob);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "muted" })).await["code"], 202);
    hook.expect_msgs("bob-phone", 3).await;

    // P back on; the provider says the phone's token is gone (410): the device is removed.
    let (mut bob, _) = login(addr, "push-bob", None, false).await;
    assert_eq!(bob.req("sub", json!({ "topic": alice_id })).await["code"], 200);
    assert_eq!(bob.req("set", json!({ "topic": alice_id, "sub": { "mode": "JRWPA" } })).await["code"], 200);
    drop(bob);
    // Whatever silent push the mode change makes lands before the provider starts refusing the token.
    tokio::time::sleep(Duration::from_millis(500)).await;
    hook.gone.lock().unwrap().push("bob-phone".into());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "gone" })).await["code"], 202);
    hook.expect_msgs("bob-phone", 4).await;
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "after" })).await["code"], 202);
    hook.expect_msgs("bob-phone", 4).await;

    // Every push the hook answered 200 counts as a success (the silent `sub` ones included); the 410 does not.
    let metrics = node.service().render_metrics();
    let ok = hook.got.lock().unwrap().len() - 1;
    let succeeded = common::sample(&metrics, "palaver_push_succeeded_total{provider=\"webhook\"}");
    assert_eq!(succeeded, Some(ok as f64), "{metrics}");
    assert!(metrics.contains("palaver_push_devices_removed_total 1"), "{metrics}");
    assert!(metrics.contains(&format!("palaver_push_deduplicated_total {replayed}\n")), "{metrics}");
    node.shutdown().await;
}

/// A node with `push.worker` off makes push tasks and sends none; they wait in the queue's file, and the same
/// node restarted with the worker on sends each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_made_without_the_worker_wait_for_it() {
    let hook = Hook::default();
    let url = hook.start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = |worker: &'static str| {
        vec![
            ("PALAVER_PUSH__ENABLED", "true"),
            ("PALAVER_PUSH__WORKER", worker),
            ("PALAVER_PUSH__WEBHOOK__URL", url.as_str()),
            ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
        ]
    };
    let node = common::start(dir.path(), &env("false")).await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "wait-alice", None, true).await;
    let (bob, bob_id) = login(addr, "wait-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    for text in ["one", "two"] {
        assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": text })).await["code"], 202);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let metrics = node.service().render_metrics();
    let made = common::sample(&metrics, "palaver_push_triggered_total").unwrap_or(0.0);
    assert!(made >= 2.0, "the messages' tasks are made: {metrics}");
    assert!(hook.to("bob-phone").is_empty(), "no worker, no push");
    drop(alice);
    node.shutdown().await;

    let node = common::start(dir.path(), &env("true")).await;
    let got = hook.expect_msgs("bob-phone", 2).await;
    let seqs: Vec<&str> = got.iter().map(|p| p["data"]["seq"].as_str().unwrap()).collect();
    assert_eq!(seqs, ["1", "2"]);
    node.shutdown().await;
}

/// A provider that keeps failing neither blocks the queue nor loses a push: each message's push is retried
/// `push.max_attempts` times, then recorded on the dead-letter topic with the reason and that one task (the
/// queue's record may carry the topic's other tasks), and the next push goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_provider_leaves_one_dead_letter_per_push() {
    let hook = Hook::default();
    hook.failing.lock().unwrap().push("bob-phone".into());
    let url = hook.start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PALAVER_PUSH__ENABLED", "true"),
        ("PALAVER_PUSH__MAX_ATTEMPTS", "2"),
        ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10"),
        ("PALAVER_PUSH__WEBHOOK__URL", url.as_str()),
        ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
    ];
    let node = common::start(dir.path(), &env).await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "dlq-alice", None, true).await;
    let (bob, bob_id) = login(addr, "dlq-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    for text in ["one", "two", "three"] {
        assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": text })).await["code"], 202);
    }
    let mut letters = node.queue().subscribe(QueueTopic::DeadLetter, "test.dlq").await.unwrap();
    let mut seqs = Vec::new();
    while seqs.len() < 3 {
        let letter = tokio::time::timeout(Duration::from_secs(10), letters.next()).await.expect("a letter").unwrap();
        let r = &letter.record;
        let task: Value = serde_json::from_slice(&r.payload).unwrap();
        if task["what"] != "msg" {
            continue;
        }
        assert_eq!(r.header("dlq.topic"), Some("push"));
        assert!(r.header("dlq.error").is_some_and(|e| e.contains("webhook")), "{:?}", r.headers);
        assert!(r.header("push.device").is_some_and(|d| !d.is_empty()), "{:?}", r.headers);
        assert_eq!(r.header("push.seq").map(str::to_owned), Some(task["seq"].to_string()), "the letter's one task");
        seqs.push(task["seq"].as_i64().unwrap());
    }
    assert_eq!(seqs, [1, 2, 3], "one letter per push, in order");
    assert_eq!(hook.msgs("bob-phone").len(), 6, "two attempts each");
    let metrics = node.service().render_metrics();
    assert!(common::sample(&metrics, "palaver_push_dead_lettered_total").unwrap_or(0.0) >= 3.0, "{metrics}");
    drop(alice);
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
    // Opening the P2P topic sends Bob's devices a silent `sub` push; it is out before any filter is on.
    assert_eq!(hook.expect("bob-phone", 1).await[0]["data"]["what"], "sub");

    // Rewrite: a message that mentions Bob reaches him with the tenant's mention text.
    quiet_hours(addr, json!({ "enabled": true, "settings": { "mention_body": "You were mentioned" } })).await;
    let mention = json!({ "txt": "hi bob", "ent": [{ "tp": "MN", "data": { "val": bob_id } }],
        "fmt": [{ "at": 3, "len": 3, "key": 0 }] });
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": mention })).await["code"], 202);
    let got = hook.expect_msgs("bob-phone", 1).await;
    assert_eq!(got[0]["body"], "You were mentioned", "{}", got[0]);
    assert_eq!(got[0]["data"]["seq"], "1", "the locating fields are the host's");
    // Keep: no mention, no quiet hours, the push as built.
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "plain" })).await["code"], 202);
    let got = hook.expect_msgs("bob-phone", 2).await;
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
    hook.expect_msgs("bob-phone", 2).await;

    let metrics = node.service().render_metrics();
    let count = |series: &str| common::sample(&metrics, series).unwrap_or(-1.0);
    assert_eq!(count("palaver_push_filtered_total{decision=\"rewrite\"}"), 1.0, "{metrics}");
    assert_eq!(count("palaver_push_filtered_total{decision=\"keep\"}"), 1.0);
    assert_eq!(count("palaver_push_filtered_total{decision=\"drop\"}"), 1.0);
    assert_eq!(count("palaver_plugin_calls_total{plugin=\"quiet-hours\",hook=\"before-push\"}"), 3.0);
    node.shutdown().await;
}

/// The environment of a node that pushes through the webhook at `url`.
fn push_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PALAVER_PUSH__ENABLED", "true".into()),
        ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10".into()),
        ("PALAVER_PUSH__WEBHOOK__URL", url.into()),
        ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET.into()),
        ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50".into()),
    ]
}

fn pairs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Asserts that `push` is a silent `what` push about `topic` carrying no text.
fn assert_silent(push: &Value, what: &str, topic: &str) {
    let data = &push["data"];
    assert_eq!((data["what"].as_str(), data["topic"].as_str()), (Some(what), Some(topic)), "{push}");
    assert_eq!((&push["silent"], &data["silent"]), (&json!(true), &json!("true")), "{push}");
    assert_eq!(push["body"], "", "a silent push shows nothing: {push}");
    assert!(data.get("content").is_none(), "{push}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_receipts_and_subscription_changes_push_silently() {
    let hook = Hook::default();
    let url = hook.start().await;
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(dir.path(), &pairs(&push_env(&url))).await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "silent-alice", None, true).await;
    let (bob, bob_id) = login(addr, "silent-bob", Some("bob-phone"), true).await;
    drop(bob);

    // Alice adds the offline Bob to her group: his device learns of the new subscription, silently.
    let grp = alice.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let added = alice.req("set", json!({ "topic": grp, "sub": { "user": bob_id, "mode": "JRWP" } })).await;
    assert_eq!(added["code"], 200, "{added}");
    let got = hook.expect("bob-phone", 1).await;
    assert_silent(&got[0], "sub", &grp);
    assert_eq!(got[0]["user"], bob_id);

    // A message reaches the phone; Bob reads it on his tablet: the phone is told, silently, and the tablet
    // that read it is not.
    assert_eq!(alice.req("pub", json!({ "topic": grp, "content": "hello" })).await["code"], 202);
    assert_eq!(hook.expect("bob-phone", 2).await[1]["data"]["what"], "msg");
    let (mut tablet, _) = login(addr, "silent-bob", Some("bob-tablet"), false).await;
    assert_eq!(tablet.req("sub", json!({ "topic": grp })).await["code"], 200);
    tablet.send_raw(json!({ "note": { "topic": grp, "what": "read", "seq": 1 } }).to_string()).await;
    let got = hook.expect("bob-phone", 3).await;
    assert_silent(&got[2], "read", &grp);
    assert_eq!(got[2]["data"]["seq"], "1");
    assert!(hook.to("bob-tablet").is_empty(), "the reading device gets nothing");
    // The same receipt again changes nothing and pushes nothing; a later one pushes again.
    tablet.send_raw(json!({ "note": { "topic": grp, "what": "read", "seq": 1 } }).to_string()).await;
    hook.expect("bob-phone", 3).await;

    // Alice removes Bob: both his devices learn the subscription is gone.
    drop(tablet);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let removed = alice.req("del", json!({ "topic": grp, "what": "sub", "user": bob_id })).await;
    assert_eq!(removed["code"], 200, "{removed}");
    assert_silent(&hook.expect("bob-phone", 4).await[3], "sub", &grp);
    assert_silent(&hook.expect("bob-tablet", 1).await[0], "sub", &grp);
    node.shutdown().await;
}

async fn admin(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> u16 {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    http_with(addr, method, path, &[("Authorization", &auth)], body).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_message_pushes_once_released() {
    let hook = Hook::default();
    let url = hook.start().await;
    let plugins = plugins_dir(&["moderation-"]);
    let dir = tempfile::tempdir().unwrap();
    let mut env = push_env(&url);
    env.push(("PALAVER_PLUGINS__DIR", plugins.path().to_string_lossy().into_owned()));
    env.push(("PALAVER_ADMIN__TOKEN", ADMIN_TOKEN.into()));
    let node = common::start(dir.path(), &pairs(&env)).await;
    let addr = node.addr();
    let hold = r#"{"settings":{"hold_words":["review"]}}"#;
    assert_eq!(admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", hold).await, 200);
    let (mut alice, alice_id) = login(addr, "held-alice", None, true).await;
    let (bob, bob_id) = login(addr, "held-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);

    let held = alice.req("pub", json!({ "topic": bob_id, "content": "please review this" })).await;
    assert_eq!(held["params"]["audit"], "pending", "{held}");
    let seq = held["params"]["seq"].as_i64().unwrap();
    hook.expect_msgs("bob-phone", 0).await;

    let p2p = palaver_core::p2p_name(
        palaver_core::UserId::parse(&alice_id).unwrap(),
        palaver_core::UserId::parse(&bob_id).unwrap(),
    );
    let audit = format!("/v1/admin/tenants/1/topics/{p2p}/messages/{seq}/audit");
    assert_eq!(admin(addr, "POST", &audit, r#"{"action":"release"}"#).await, 200);
    let got = hook.expect_msgs("bob-phone", 1).await;
    assert_eq!(got[0]["data"]["seq"], "1");
    assert_eq!(got[0]["silent"], false);
    assert_eq!(seq, 1);
    // Releasing again is refused and pushes nothing more.
    assert_eq!(admin(addr, "POST", &audit, r#"{"action":"release"}"#).await, 409);
    hook.expect_msgs("bob-phone", 1).await;
    node.shutdown().await;
}

/// Asserts that `push` carries the call state `webrtc`, alerting with `body` (or silent when `body` is empty).
fn assert_call_push(push: &Value, webrtc: &str, body: &str) {
    let data = &push["data"];
    assert_eq!((data["what"].as_str(), data["webrtc"].as_str()), (Some("msg"), Some(webrtc)), "{push}");
    assert_eq!(data["mime"], "application/x-tinode-webrtc", "{push}");
    assert_eq!(push["body"], body, "{push}");
    assert_eq!(push["silent"], body.is_empty(), "only a ring and a missed call alert: {push}");
    assert!(data.get("content").is_none(), "a call push shows no text even with previews on: {push}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_incoming_call_rings_an_offline_phone_and_its_progress_stops_it() {
    let hook = Hook::default();
    let url = hook.start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut env = push_env(&url);
    env.push(("PALAVER_PUSH__PREVIEW", "true".into()));
    env.push(("PALAVER_CALLS__RING_TIMEOUT_MS", "1000".into()));
    let node = common::start(dir.path(), &pairs(&env)).await;
    let addr = node.addr();
    let (mut alice, _) = login(addr, "call-alice", None, true).await;
    let (bob, bob_id) = login(addr, "call-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    let head = json!({ "webrtc": "started", "mime": "application/x-tinode-webrtc" });
    let dial = json!({ "topic": bob_id, "head": head, "content": "call me" });

    // Bob is offline: his phone rings (an alert, high priority at the provider), and when nobody answers
    // within the ring timeout it shows a missed call.
    assert_eq!(alice.req("pub", dial.clone()).await["code"], 202);
    let pushes = hook.expect_msgs("bob-phone", 1).await;
    assert_call_push(&pushes[0], "started", "Incoming call");
    let alice_id = pushes[0]["data"]["xfrom"].as_str().unwrap().to_owned();
    let pushes = hook.expect_msgs("bob-phone", 2).await;
    assert_call_push(&pushes[1], "missed", "Missed call");

    // Bob answers the next call on his tablet, online on `me` only: both devices ring, and once it is
    // accepted the phone is told silently (so it stops ringing), and again when the call ends.
    let (mut tablet, _) = login(addr, "call-bob", Some("bob-tablet"), false).await;
    assert_eq!(tablet.req("sub", json!({ "topic": "me" })).await["code"], 200);
    let ack = alice.req("pub", dial).await;
    assert_eq!(ack["code"], 202, "{ack}");
    let seq = ack["params"]["seq"].as_i64().unwrap();
    assert_call_push(&hook.expect_msgs("bob-phone", 3).await[2], "started", "Incoming call");
    assert_call_push(&hook.expect_msgs("bob-tablet", 1).await[0], "started", "Incoming call");
    let accept = json!({ "note": { "topic": alice_id, "what": "call", "seq": seq, "event": "accept" } });
    tablet.send_raw(accept.to_string()).await;
    assert_call_push(&hook.expect_msgs("bob-phone", 4).await[3], "accepted", "");
    let hang_up = json!({ "note": { "topic": bob_id, "what": "call", "seq": seq, "event": "hang-up" } });
    alice.send_raw(hang_up.to_string()).await;
    let pushes = hook.expect_msgs("bob-phone", 5).await;
    assert_call_push(&pushes[4], "finished", "");
    assert!(pushes[4]["data"]["seq"].as_str().unwrap().parse::<i64>().unwrap() > seq, "a replacement's own seq");
    node.shutdown().await;
}

/// `PUT /v1/admin/tenants/1/push` with a body, as the admin.
async fn push_settings(addr: std::net::SocketAddr, method: &str, body: &str) -> (u16, Value) {
    let auth = [("Authorization", "Bearer push-admin-token")];
    let (status, text) = http_with(addr, method, "/v1/admin/tenants/1/push", &auth, body).await;
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status} {text}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenants_own_provider_replaces_the_nodes_and_its_switch_turns_push_off() {
    let (node_hook, tenant_hook) = (Hook::default(), Hook::default());
    let (node_url, tenant_url) = (node_hook.start().await, tenant_hook.start().await);
    let dir = tempfile::tempdir().unwrap();
    let node = common::start(
        dir.path(),
        &[
            ("PALAVER_PUSH__ENABLED", "true"),
            ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10"),
            ("PALAVER_PUSH__WEBHOOK__URL", &node_url),
            ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
            ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
            ("PALAVER_ADMIN__TOKEN", "push-admin-token"),
        ],
    )
    .await;
    let addr = node.addr();

    // The tenant's own webhook; the answer shows it in force, its secret hidden.
    let own = json!({ "webhook": { "url": tenant_url, "secret": SECRET } }).to_string();
    let (status, v) = push_settings(addr, "PUT", &own).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["providers"], json!([{ "name": "webhook", "source": "tenant" }]), "{v}");
    assert_eq!(v["settings"]["webhook"], json!({ "url": tenant_url, "secret": "***" }), "{v}");
    assert_eq!((v["enabled"].clone(), v["preview"].clone()), (json!(true), json!(false)), "{v}");
    // What does not build is refused and changes nothing.
    for bad in [r#"{"webhook":{"url":"ftp://x","secret":"s"}}"#, r#"{"webhook":{"url":"https://x","secret":""}}"#] {
        let (status, v) = push_settings(addr, "PUT", bad).await;
        assert_eq!((status, v["reason"].as_str()), (400, Some("MALFORMED")), "{bad}: {v}");
    }
    let (status, v) = push_settings(addr, "PUT", r#"{"colour":1}"#).await;
    assert_eq!(status, 400, "an unknown field: {v}");
    assert_eq!(push_settings(addr, "GET", "").await.1["providers"][0]["source"], "tenant");

    let (mut alice, _) = login(addr, "own-alice", None, true).await;
    let (bob, bob_id) = login(addr, "own-bob", Some("own-bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "to the tenant's hook" })).await["code"], 202);
    tenant_hook.expect_msgs("own-bob-phone", 1).await;
    assert!(node_hook.to("own-bob-phone").is_empty(), "the node's webhook is not the tenant's");

    // null restores the node's provider.
    let (status, v) = push_settings(addr, "PUT", r#"{"webhook":null}"#).await;
    assert_eq!((status, v["providers"][0]["source"].as_str()), (200, Some("node")), "{v}");
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "to the node's hook" })).await["code"], 202);
    node_hook.expect_msgs("own-bob-phone", 1).await;

    // The tenant turns push off: the next message pushes nobody.
    assert_eq!(push_settings(addr, "PUT", r#"{"enabled":false}"#).await.1["enabled"], false);
    assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": "silence" })).await["code"], 202);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(node_hook.msgs("own-bob-phone").len(), 1, "push is off for the tenant");
    assert_eq!(tenant_hook.msgs("own-bob-phone").len(), 1);
    node.shutdown().await;
}
