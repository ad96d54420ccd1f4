//! Editing (`{pub head:{replace:":<seq>"}}`) and recalling (`{del hard:true}`) one's own messages: only the
//! sender, only within the windows, only live originals; a recall deletes for everyone on every node, anything
//! else without D stays a delete for oneself.

mod harness;

use harness::{Client, cluster, data, of, service_with};
use palaver_service::{EditConfig, ServiceConfig};
use serde_json::{Value, json};
use std::time::Duration;

fn windows(edit_ms: u64, recall_ms: u64) -> ServiceConfig {
    ServiceConfig {
        edits: EditConfig {
            edit_window: Duration::from_millis(edit_ms),
            recall_window: Duration::from_millis(recall_ms),
        },
        ..ServiceConfig::default()
    }
}

async fn edit(c: &mut Client, topic: &str, seq: i64, text: &str) -> Value {
    c.req("pub", json!({ "topic": topic, "head": { "replace": format!(":{seq}") }, "content": text })).await.0
}

#[tokio::test]
async fn only_the_sender_edits_a_live_original_within_the_window() {
    let svc = service_with(windows(60_000, 60_000));
    let mut alice = Client::connect(&svc);
    alice.signup("alice", "alice-pass").await;
    let mut bob = Client::connect(&svc);
    bob.signup("bob", "bob-pass").await;
    assert_eq!(alice.sub(&bob.user).await["code"], 200);
    assert_eq!(bob.sub(&alice.user).await["code"], 200);
    let seq = alice.publish(&bob.user, json!("helo")).await["params"]["seq"].as_i64().unwrap();

    let theirs = edit(&mut bob, &alice.user, seq, "hijacked").await;
    assert_eq!(theirs["code"], 403, "{theirs}");
    assert!(theirs["text"].as_str().unwrap().contains("only its sender"), "{theirs}");
    bob.drain();
    let ok = edit(&mut alice, &bob.user, seq, "hello").await;
    assert_eq!(ok["code"], 202, "{ok}");
    let replacement = ok["params"]["seq"].as_i64().unwrap();
    let (got, _) = bob.wait_for("the edit", |f| f["data"]["seq"] == json!(replacement)).await;
    assert_eq!(got["data"]["head"]["replace"], format!(":{seq}"));
    assert_eq!(got["data"]["content"], "hello");

    assert_eq!(edit(&mut alice, &bob.user, replacement, "again").await["code"], 400, "a replacement is not edited");
    assert_eq!(edit(&mut alice, &bob.user, 999, "nothing").await["code"], 404);
    let bad = alice.req("pub", json!({ "topic": bob.user, "head": { "replace": "7" }, "content": "x" })).await.0;
    assert_eq!(bad["code"], 400, "{bad}");
}

#[tokio::test]
async fn an_edit_after_the_window_is_refused() {
    let svc = service_with(windows(1, 60_000));
    let mut alice = Client::connect(&svc);
    alice.signup("alice", "alice-pass").await;
    let group = alice.new_group("g").await;
    let seq = alice.publish(&group, json!("first")).await["params"]["seq"].as_i64().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let late = edit(&mut alice, &group, seq, "too late").await;
    assert_eq!(late["code"], 403, "{late}");
    assert!(late["text"].as_str().unwrap().contains("edited only within 1 ms of sending"), "{late}");
    let off = service_with(windows(0, 0));
    let mut carol = Client::connect(&off);
    carol.signup("carol", "carol-pass").await;
    let g = carol.new_group("g").await;
    let seq = carol.publish(&g, json!("x")).await["params"]["seq"].as_i64().unwrap();
    assert_eq!(edit(&mut carol, &g, seq, "y").await["code"], 403, "edits are off");
}

/// A sender's hard delete of their own recent message deletes it for everyone, on every node; a hard delete of
/// someone else's message without D, or after the window, hides it for the one who asked only.
#[tokio::test]
async fn a_recall_deletes_for_everyone_on_every_node() {
    let nodes = cluster(2, |cfg| {
        cfg.edits = EditConfig { edit_window: Duration::from_secs(60), recall_window: Duration::from_secs(60) }
    });
    let mut alice = Client::connect(&nodes[0]);
    alice.signup("alice", "alice-pass").await;
    let mut bob = Client::connect(&nodes[1]);
    bob.signup("bob", "bob-pass").await;
    assert_eq!(alice.sub(&bob.user).await["code"], 200);
    assert_eq!(bob.sub(&alice.user).await["code"], 200);
    let first = alice.publish(&bob.user, json!("oops")).await["params"]["seq"].as_i64().unwrap();
    let second = alice.publish(&bob.user, json!("keep")).await["params"]["seq"].as_i64().unwrap();
    bob.wait_for("the second message", |f| f["data"]["seq"] == json!(second)).await;

    // Bob (no D in a P2P topic) cannot delete Alice's message for her: it goes for him only.
    let (ctrl, _) = bob
        .req("del", json!({ "topic": alice.user, "what": "msg", "delseq": [{ "low": second }], "hard": true }))
        .await;
    assert_eq!(ctrl["code"], 200);

    // Alice recalls her first message: Bob, on the other node, is told it is gone for everyone.
    let (ctrl, _) =
        alice.req("del", json!({ "topic": bob.user, "what": "msg", "delseq": [{ "low": first }], "hard": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let (pres, _) = bob.wait_for("the recall", |f| f["pres"]["what"] == "del").await;
    assert_eq!(pres["pres"]["delseq"], json!([{ "low": first }]), "{pres}");
    // Alice still reads the message Bob hid for himself only; neither reads the recalled one.
    let (_, frames) = alice.req("get", json!({ "topic": bob.user, "what": "data" })).await;
    let seen: Vec<i64> = data(&frames).iter().map(|d| d["seq"].as_i64().unwrap()).collect();
    assert_eq!(seen, vec![second], "Alice sees her kept message only: {frames:?}");
    let (_, frames) = bob.req("get", json!({ "topic": alice.user, "what": "data" })).await;
    assert!(data(&frames).is_empty(), "Bob hid one and Alice recalled the other: {frames:?}");
    assert!(of(&frames, "ctrl").iter().all(|c| c["code"].as_i64().unwrap() < 400));
}
