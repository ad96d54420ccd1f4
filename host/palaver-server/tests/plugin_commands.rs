//! Commands a plugin offers to clients (`POST /v1/im/plugins/{plugin}/commands/{command}`): listed in the OpenAPI
//! document from the manifests, run with the `/v1/im` API's authentication and error shape, and only the ones a
//! manifest offers (never a host command, whose facts a client could otherwise forge). Needs `cargo xtask
//! plugins` to have built `target/plugins`.

mod common;

use common::{Client, KEY, http_with, plugins_dir};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

const ADMIN: &str = "test-admin-token-plugin-commands-0123";
const GREET: &str = "/v1/im/plugins/hello/commands/hello.greet";

async fn call(addr: SocketAddr, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
    let auth = token.map(|t| format!("Token {t}"));
    let mut headers = vec![("X-Tinode-APIKey", KEY)];
    if let Some(a) = auth.as_deref() {
        headers.push(("Authorization", a));
    }
    let (status, text) = http_with(addr, method, path, &headers, body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn reason(v: &Value) -> (&str, &str) {
    (v["reason"].as_str().unwrap_or(""), v["message"].as_str().unwrap_or(""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_client_command_runs_end_to_end_over_http() {
    let plugins = plugins_dir(&["hello-", "friends-"]);
    let data = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_string_lossy().into_owned();
    let node = common::start(data.path(), &[("PALAVER_PLUGINS__DIR", &dir), ("PALAVER_ADMIN__TOKEN", ADMIN)]).await;
    let addr = node.addr();
    let mut c = Client::connect(addr).await;
    let (_, token) = c.signup("greeter").await;

    // The document lists what the manifests offer, with their schemas, and nothing else of the plugins'.
    let (status, text) = http_with(addr, "GET", "/v1/openapi.json", &[], "").await;
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let op = &doc["paths"][GREET]["post"];
    assert_eq!(op["operationId"], "plugin.hello.hello.greet", "{op}");
    assert!(op["summary"].as_str().unwrap().starts_with("Greet someone"), "{op}");
    assert_eq!(op["requestBody"]["content"]["application/json"]["schema"]["required"], json!(["name"]));
    assert_eq!(op["security"], json!([{ "apiKey": [], "token": [] }]));
    assert!(doc["paths"]["/v1/im/plugins/hello/commands/hello.count"]["post"].is_object());
    let listed: Vec<&String> =
        doc["paths"].as_object().unwrap().keys().filter(|p| p.starts_with("/v1/im/plugins/")).collect();
    assert_eq!(listed.len(), 2, "hello.whoami and the friends plugin's commands are not offered: {listed:?}");

    // Off for the tenant until enabled.
    let (status, v) = call(addr, "POST", GREET, Some(&token), r#"{"name":"Ann"}"#).await;
    assert_eq!((status, reason(&v).0), (404, "COMMAND_NOT_AVAILABLE"), "{v}");
    let auth = format!("Bearer {ADMIN}");
    let (status, _) =
        http_with(addr, "PUT", "/v1/admin/tenants/1/plugins/hello", &[("Authorization", &auth)], r#"{"enabled":true}"#)
            .await;
    assert_eq!(status, 200);

    let (status, v) = call(addr, "POST", GREET, Some(&token), r#"{"name":"Ann"}"#).await;
    assert_eq!((status, &v), (200, &json!({ "greeting": "Hello, Ann!", "count": 1 })));
    // The plugin's event reaches the caller's socket once the call succeeded.
    let event = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let f = c.next().await.expect("the socket stays open");
            if f["info"]["event"] == "hello.greeted" {
                return f["info"].clone();
            }
        }
    })
    .await
    .expect("hello.greeted within 5 s");
    assert_eq!((&event["payload"]["count"], &event["what"]), (&json!(1), &json!("im")), "{event}");
    let (status, v) = call(addr, "POST", "/v1/im/plugins/hello/commands/hello.count", Some(&token), "").await;
    assert_eq!((status, &v), (200, &json!({ "count": 1 })), "an empty body is no arguments");

    // The plugin's own refusal keeps its code in the message under a reason of the table.
    let (status, v) = call(addr, "POST", GREET, Some(&token), "{}").await;
    let (why, message) = reason(&v);
    assert_eq!((status, why), (422, "RULE_REFUSED"), "{v}");
    assert!(message.starts_with("NAME_REQUIRED: "), "{v}");

    // Only what a manifest offers, and never the host's own commands.
    for path in [
        "/v1/im/plugins/hello/commands/hello.whoami",
        "/v1/im/plugins/friends/commands/friend.request.create",
        "/v1/im/plugins/nobody/commands/nobody.home",
    ] {
        let (status, v) = call(addr, "POST", path, Some(&token), "{}").await;
        assert_eq!((status, reason(&v).0), (404, "UNKNOWN_COMMAND"), "{path}: {v}");
    }
    // The `/v1/im` checks and error shape.
    let (status, v) = call(addr, "POST", GREET, None, r#"{"name":"Ann"}"#).await;
    assert_eq!((status, reason(&v).0), (401, "TOKEN_REQUIRED"));
    let (status, v) = call(addr, "POST", GREET, Some("forged"), r#"{"name":"Ann"}"#).await;
    assert_eq!((status, reason(&v).0), (401, "TOKEN_INVALID"));
    let (status, v) = call(addr, "GET", GREET, Some(&token), "").await;
    assert_eq!((status, reason(&v).0), (405, "METHOD_NOT_ALLOWED"));
    let (status, v) = call(addr, "POST", GREET, Some(&token), "[1]").await;
    assert_eq!((status, reason(&v).0), (400, "BAD_JSON"));
    let big = format!("{{\"name\":\"{}\"}}", "x".repeat(70 * 1024));
    let (status, v) = call(addr, "POST", GREET, Some(&token), &big).await;
    assert_eq!((status, reason(&v).0), (413, "BODY_TOO_LARGE"));
    let (status, text) = http_with(addr, "POST", GREET, &[("Authorization", &format!("Token {token}"))], "{}").await;
    assert_eq!(status, 403, "no API key: {text}");
    node.shutdown().await;
}
