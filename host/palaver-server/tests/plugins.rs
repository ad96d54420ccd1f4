//! The node with the moderation plugin loaded from a plugins directory: the publish path refuses what its rules
//! refuse, the admin API lists, reloads and rolls back behind its token, and per-tenant settings and
//! enablement change verdicts at once. Needs `cargo xtask plugins` to have built `target/plugins`.

mod common;

use common::{Client, http_with, plugins_dir, start};
use serde_json::{Value, json};

const TOKEN: &str = "test-admin-token-0123456789";

async fn admin(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moderation_admin_api_and_tenant_settings() {
    // A plugins directory holding only the built moderation plugin.
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_ADMIN__TOKEN", TOKEN)]).await;
    let addr = node.addr();

    let (status, _) = http_with(addr, "GET", "/v1/admin/plugins", &[("Authorization", "Bearer wrong")], "").await;
    assert_eq!(status, 401, "the admin API needs its token");
    let (status, list) = admin(addr, "GET", "/v1/admin/plugins", "").await;
    assert_eq!(status, 200);
    let plugin = &list["plugins"][0];
    assert_eq!(plugin["name"], "moderation");
    assert_eq!(plugin["version"], "0.1.0");
    assert!(plugin["hash"].as_str().is_some_and(|h| h.len() == 64), "{plugin}");

    let mut c = Client::connect(addr).await;
    c.signup("moderated").await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let ctrl = c.req("pub", json!({ "topic": grp, "content": "this is forbidden" })).await;
    assert_eq!(ctrl["code"], 422, "{ctrl}");
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "fine" })).await["params"]["seq"], 1);

    // The tenant's own word list replaces the default one at once.
    let (status, choice) =
        admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", r#"{"settings":{"words":["banana"]}}"#).await;
    assert_eq!(status, 200, "{choice}");
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "a banana" })).await["code"], 422);
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "forbidden now ok" })).await["code"], 202);
    let (status, _) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", r#"{"settings":{"words":7}}"#).await;
    assert_eq!(status, 409, "settings are checked against the plugin's schema");
    // A message as large as the frame limit allows is still scanned to its end.
    let big = format!("{} banana", "a ".repeat(((256 << 10) - 300) / 2));
    let ctrl = c.req("pub", json!({ "topic": grp, "content": big })).await;
    assert_eq!(ctrl["code"], 422, "{}", ctrl["text"]);
    // Moderation fails closed unless the tenant chose otherwise; the choice is checked whole.
    let (status, choice) = admin(addr, "GET", "/v1/admin/tenants/1/plugins/moderation", "").await;
    assert_eq!((status, &choice["failure"]["before-publish"]), (200, &json!("closed")), "{choice}");
    let open = r#"{"failure":{"before-publish":"open"}}"#;
    let (status, choice) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", open).await;
    assert_eq!((status, &choice["failure"]["before-publish"]), (200, &json!("open")), "{choice}");
    assert_eq!(choice["failure_chosen"], json!({ "before-publish": "open" }));
    let bad = r#"{"failure":{"before-publish":"sometimes"}}"#;
    let (status, _) = admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", bad).await;
    assert_eq!(status, 409);
    // Disabled for the tenant, the plugin no longer judges its messages.
    admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", r#"{"enabled":false}"#).await;
    assert_eq!(c.req("pub", json!({ "topic": grp, "content": "a banana" })).await["code"], 202);

    let (status, reloaded) = admin(addr, "POST", "/v1/admin/plugins/moderation/reload", "").await;
    assert_eq!(status, 200, "{reloaded}");
    assert_eq!(reloaded["loaded"][0]["changed"], false, "the same component reloads as unchanged");
    let (status, _) = admin(addr, "POST", "/v1/admin/plugins/moderation/rollback", "").await;
    assert_eq!(status, 409, "there is no previous version to roll back to");
    let (status, _) = admin(addr, "POST", "/v1/admin/plugins/nosuch/reload", "").await;
    assert_eq!(status, 409);
    node.shutdown().await;
}

#[tokio::test]
async fn without_a_token_there_is_no_admin_api() {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[]).await;
    let (status, _) = admin(node.addr(), "GET", "/v1/admin/plugins", "").await;
    assert_eq!(status, 404);
    node.shutdown().await;
}

/// The next `{data}` frame `c` receives, skipping everything else; `None` if none comes.
async fn next_data(c: &mut Client) -> Option<Value> {
    while let Some(f) = c.next().await {
        if f.get("data").is_some() {
            return Some(f["data"].clone());
        }
    }
    None
}

/// The seqs `c` reads from the topic's history.
async fn history(c: &mut Client, topic: &str) -> Vec<i64> {
    c.n += 1;
    let id = format!("h{}", c.n);
    c.send_raw(json!({ "get": { "id": id, "topic": topic, "what": "data" } }).to_string()).await;
    let mut seqs = Vec::new();
    while let Some(f) = c.next().await {
        if let Some(seq) = f["data"]["seq"].as_i64() {
            seqs.push(seq);
        } else if f["ctrl"]["id"] == json!(id) {
            break;
        }
    }
    seqs.sort_unstable();
    seqs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_messages_are_released_or_rejected_through_the_admin_api() {
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_ADMIN__TOKEN", TOKEN)]).await;
    let addr = node.addr();
    let hold = r#"{"settings":{"hold_words":["review"]}}"#;
    assert_eq!(admin(addr, "PUT", "/v1/admin/tenants/1/plugins/moderation", hold).await.0, 200);

    let mut a = Client::connect(addr).await;
    a.signup("sender").await;
    let grp = a.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    let mut b = Client::connect(addr).await;
    b.signup("reader").await;
    assert_eq!(b.req("sub", json!({ "topic": grp })).await["code"], 200);

    let held = a.req("pub", json!({ "topic": grp, "content": "please review this" })).await;
    assert_eq!((held["code"].as_i64(), held["params"]["audit"].as_str()), (Some(202), Some("pending")), "{held}");
    let held_seq = held["params"]["seq"].as_i64().unwrap();
    let fine = a.req("pub", json!({ "topic": grp, "content": "fine" })).await["params"]["seq"].as_i64().unwrap();
    assert_eq!(next_data(&mut b).await.unwrap()["seq"], fine, "the held message is not delivered");
    assert_eq!(history(&mut b, &grp).await, vec![fine], "nor readable by another member");

    // Bad requests answer in the one error shape of both HTTP APIs and change nothing.
    let audit = |topic: &str, seq: i64| format!("/v1/admin/tenants/1/topics/{topic}/messages/{seq}/audit");
    let refused = |status: u16, body: &Value| -> (u16, String) {
        let shape: palaver_api::ErrorBody = serde_json::from_value(body.clone()).expect("the error shape");
        assert_eq!(shape.code, status, "{body}");
        (status, shape.reason.name().to_owned())
    };
    let (status, body) = admin(addr, "POST", &audit(&grp, held_seq), r#"{"action":"approve"}"#).await;
    assert_eq!(refused(status, &body), (400, "BAD_ACTION".into()));
    let (status, body) = admin(addr, "POST", &audit(&grp, 999), r#"{"action":"release"}"#).await;
    assert_eq!(refused(status, &body), (404, "MESSAGE_NOT_FOUND".into()));
    let (status, body) = admin(addr, "POST", &audit("grpNoSuchTopic0", held_seq), r#"{"action":"release"}"#).await;
    assert_eq!(refused(status, &body), (404, "TOPIC_NOT_FOUND".into()));
    let (status, body) = admin(addr, "POST", &audit(&grp, fine), r#"{"action":"reject"}"#).await;
    assert_eq!(refused(status, &body), (409, "MESSAGE_NOT_HELD".into()), "a delivered message is not held");
    let (status, body) = admin(addr, "POST", "/v1/admin/tenants/x/topics/grpX/messages/1/audit", "{}").await;
    assert_eq!(refused(status, &body), (400, "BAD_TENANT".into()));
    let (status, body) = admin(addr, "POST", &audit(&grp, held_seq), "[1]").await;
    assert_eq!(refused(status, &body), (400, "BAD_JSON".into()));
    let (status, text) = http_with(addr, "GET", "/v1/admin/plugins", &[], "").await;
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(refused(status, &body), (401, "ADMIN_TOKEN_REQUIRED".into()));

    let (status, body) = admin(addr, "POST", &audit(&grp, held_seq), r#"{"action":"release"}"#).await;
    assert_eq!(status, 200, "{body}");
    let got = next_data(&mut b).await.expect("the released message is delivered");
    assert_eq!((got["seq"].as_i64(), got["content"].as_str()), (Some(held_seq), Some("please review this")));
    assert_eq!(history(&mut b, &grp).await, vec![held_seq, fine], "and joins the history");
    let (status, _) = admin(addr, "POST", &audit(&grp, held_seq), r#"{"action":"release"}"#).await;
    assert_eq!(status, 409, "released once, never delivered twice");

    let rejected = a.req("pub", json!({ "topic": grp, "content": "review me too" })).await;
    let rejected_seq = rejected["params"]["seq"].as_i64().unwrap();
    let (status, body) = admin(addr, "POST", &audit(&grp, rejected_seq), r#"{"action":"reject"}"#).await;
    assert_eq!((status, &body["audit"]), (200, &json!("reject")), "{body}");
    let after = a.req("pub", json!({ "topic": grp, "content": "after" })).await["params"]["seq"].as_i64().unwrap();
    assert_eq!(next_data(&mut b).await.unwrap()["seq"], after, "the rejected message is not delivered");
    assert_eq!(history(&mut b, &grp).await, vec![held_seq, fine, after], "nor readable by another member");
    assert!(history(&mut a, &grp).await.contains(&rejected_seq), "its sender still sees it");
    node.shutdown().await;
}
