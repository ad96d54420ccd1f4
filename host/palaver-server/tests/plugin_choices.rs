//! A tenant's plugin choices (settings, enablement) are stored: a restarted node keeps them, and on two nodes a
//! change made through one is applied by the other within a second. Needs `cargo xtask plugins` to have built
//! `target/plugins` (and MariaDB and Redis for the second test).

mod common;

use common::{Client, http_with, plugins_dir};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const TOKEN: &str = "test-admin-token-choices-0123456789";
const CHOICE: &str = "/v1/admin/tenants/1/plugins/moderation";

async fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http_with(addr, method, path, &[("Authorization", &auth)], body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A group of a new user's on `addr`, and the client.
async fn group(addr: SocketAddr, login: &str) -> (Client, String) {
    let mut c = Client::connect(addr).await;
    c.signup(login).await;
    let grp = c.req("sub", json!({ "topic": "new1" })).await["topic"].as_str().unwrap().to_owned();
    (c, grp)
}

async fn publish(c: &mut Client, topic: &str, text: &str) -> u64 {
    c.req("pub", json!({ "topic": topic, "content": text })).await["code"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_keeps_the_tenants_choices() {
    let plugins = plugins_dir(&["moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let env = [("PALAVER_PLUGINS__DIR", dir.as_str()), ("PALAVER_ADMIN__TOKEN", TOKEN)];
    let node = common::start(data.path(), &env).await;
    let (status, _) = admin(node.addr(), "PUT", CHOICE, r#"{"settings":{"words":["banana"]}}"#).await;
    assert_eq!(status, 200);
    let (status, _) = admin(node.addr(), "PUT", CHOICE, r#"{"failure":{"before-publish":"open"}}"#).await;
    assert_eq!(status, 200);
    node.shutdown().await;

    let node = common::start(data.path(), &env).await;
    let (status, choice) = admin(node.addr(), "GET", CHOICE, "").await;
    assert_eq!(status, 200);
    assert_eq!(choice["settings"]["words"], json!(["banana"]), "{choice}");
    assert_eq!(choice["failure_chosen"], json!({ "before-publish": "open" }), "{choice}");
    let (mut c, grp) = group(node.addr(), "after-restart").await;
    assert_eq!(publish(&mut c, &grp, "a banana").await, 422, "the stored word list judges");
    assert_eq!(publish(&mut c, &grp, "forbidden is fine now").await, 202);
    node.shutdown().await;
}

/// A tenant narrows a plugin's HTTP allow-list within the manifest's: checked (409 otherwise), shown, stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_narrows_a_plugins_http_allow_list_and_keeps_it() {
    const PROBE: &str = "/v1/admin/tenants/1/plugins/http-probe";
    let plugins = plugins_dir(&["http-probe-", "moderation-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let env = [("PALAVER_PLUGINS__DIR", dir.as_str()), ("PALAVER_ADMIN__TOKEN", TOKEN)];
    let node = common::start(data.path(), &env).await;
    let (status, choice) = admin(node.addr(), "GET", PROBE, "").await;
    assert_eq!(status, 200, "{choice}");
    assert_eq!((&choice["http_allow"], &choice["http_allow_manifest"]), (&json!(null), &json!(["127.0.0.1"])));
    let (status, refused) = admin(node.addr(), "PUT", PROBE, r#"{"http_allow":["hooks.example.com"]}"#).await;
    assert_eq!(status, 409, "a host outside the manifest's list: {refused}");
    assert!(refused["message"].as_str().unwrap_or_default().contains("not within"), "{refused}");
    let (status, refused) = admin(node.addr(), "PUT", PROBE, r#"{"http_allow":"127.0.0.1"}"#).await;
    assert!(status == 400 || status == 409, "not a list: {status} {refused}");
    let (status, refused) = admin(node.addr(), "PUT", CHOICE, r#"{"http_allow":["127.0.0.1"]}"#).await;
    assert_eq!(status, 409, "moderation makes no HTTP requests: {refused}");
    let (status, choice) = admin(node.addr(), "PUT", PROBE, r#"{"http_allow":["http://127.0.0.1"]}"#).await;
    assert_eq!(status, 200, "{choice}");
    assert_eq!(choice["http_allow"], json!(["http://127.0.0.1"]), "{choice}");
    node.shutdown().await;

    let node = common::start(data.path(), &env).await;
    let (_, choice) = admin(node.addr(), "GET", PROBE, "").await;
    assert_eq!(choice["http_allow"], json!(["http://127.0.0.1"]), "the narrowing was stored: {choice}");
    let (status, choice) = admin(node.addr(), "PUT", PROBE, r#"{"http_allow":null}"#).await;
    assert_eq!((status, &choice["http_allow"]), (200, &json!(null)), "{choice}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_choice_made_on_one_node_is_applied_by_the_other_within_a_second() {
    let mysql = std::env::var("PALAVER_TEST_MYSQL_ADDR").unwrap_or_else(|_| "127.0.0.1:3306".into());
    let redis = std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let tag = format!("pt_choice_{:08x}", rand::random::<u32>());
    let plugins = plugins_dir(&["moderation-"]);
    let dir = plugins.path().to_string_lossy().into_owned();
    let (url, prefix) = (format!("mysql://palaver:palaver@{mysql}/{tag}_ctl"), format!("{tag}_t_"));
    let redis_cfg = format!("{{ addr = \"{redis}\", key_prefix = \"{tag}\" }}");
    let env = |node: &'static str| {
        vec![
            ("PALAVER_STORE__KIND", "mysql".to_owned()),
            ("PALAVER_STORE__URL", url.clone()),
            ("PALAVER_STORE__TENANT_DATABASE_PREFIX", prefix.clone()),
            ("PALAVER_STORE_CONFIG__REDIS", redis_cfg.clone()),
            ("PALAVER_AUTH__TOKEN_KEY", "c2hhcmVkLXRva2VuLWtleS1mb3ItdGhlLWNob2ljZXMtdGVzdC1jbHVzdGVy".to_owned()),
            ("PALAVER_SERVER__NODE_ID", node.to_owned()),
            ("PALAVER_PLUGINS__DIR", dir.clone()),
            ("PALAVER_ADMIN__TOKEN", TOKEN.to_owned()),
        ]
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |d: &std::path::Path, vars: Vec<(&'static str, String)>| {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        common::config(d, &vars)
    };
    let a = palaver_server::wiring::start(start(d1.path(), env("choices-a"))).await.expect("node a (MariaDB up?)");
    let b = palaver_server::wiring::start(start(d2.path(), env("choices-b"))).await.expect("node b");
    let (mut c, grp) = group(b.addr(), "on-node-b").await;
    assert_eq!(publish(&mut c, &grp, "this is forbidden").await, 422, "moderation judges on node b");

    let (status, _) = admin(a.addr(), "PUT", CHOICE, r#"{"enabled":false}"#).await;
    assert_eq!(status, 200);
    let changed = Instant::now();
    loop {
        if publish(&mut c, &grp, "this is forbidden").await == 202 {
            break;
        }
        assert!(changed.elapsed() < Duration::from_secs(3), "node b still judges 3 s after node a disabled it");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, choice) = admin(b.addr(), "GET", CHOICE, "").await;
    assert_eq!(choice["enabled"], false, "{choice}");
    a.shutdown().await;
    b.shutdown().await;
    common::drop_databases(&tag);
}
