//! The `/v1/im/` HTTP API's contract, whatever plugins a node runs: the OpenAPI document lists exactly the
//! routes the router serves, every route authenticates with the socket's API key and login token, and every
//! refusal has the one error shape (`{code, reason, message}`, `palaver_api::ErrorBody`) with a reason of the table.

mod common;

use common::{Client, KEY, http_with, start};
use serde_json::Value;

async fn call(addr: std::net::SocketAddr, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
    let auth = token.map(|t| format!("Token {t}"));
    let mut headers = vec![("X-Tinode-APIKey", KEY)];
    if let Some(a) = auth.as_deref() {
        headers.push(("Authorization", a));
    }
    let (status, text) = http_with(addr, method, path, &headers, body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn reason(v: &Value) -> &str {
    v["reason"].as_str().unwrap_or("")
}

/// Fills a documented path's `{parameters}` with plausible values.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{topic}" => "grpAAAAAAAAAAA",
            "{user}" => "usrAAAAAAAAAAA",
            "{id}" => "1",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_and_the_router_agree_and_every_route_authenticates() {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[]).await;
    let addr = node.addr();
    let mut c = Client::connect(addr).await;
    let (_, token) = c.signup("imapi").await;

    let (status, text) = http_with(addr, "GET", "/v1/openapi.json", &[], "").await;
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let mut operations = 0;
    for (path, methods) in paths {
        if path.starts_with("/v1/admin/") {
            continue; // the admin API's own contract: tests/admin_api.rs
        }
        assert!(path.starts_with("/v1/im/"), "{path}");
        for (method, op) in methods.as_object().unwrap() {
            operations += 1;
            let (method, url) = (method.to_uppercase(), concrete(path));
            let body = if op.get("requestBody").is_some() { "{}" } else { "" };
            // Without a token: the route exists (not NO_ROUTE) and refuses.
            let (status, v) = call(addr, &method, &url, None, body).await;
            assert_eq!((status, reason(&v)), (401, "TOKEN_REQUIRED"), "{method} {url}: {v}");
            assert_eq!(v["code"], 401);
            assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
            // With one: this node runs no plugins, so the route is there and a plugin's command is not;
            // notifications and reports are the host's own and answer for real.
            let (status, v) = call(addr, &method, &url, Some(&token), body).await;
            if path.starts_with("/v1/im/notifications") {
                assert!(status == 200 || reason(&v) == "NOTIFICATION_NOT_FOUND", "{method} {url}: {status} {v}");
                continue;
            }
            if path.starts_with("/v1/im/reports") {
                assert_eq!((status, reason(&v)), (400, "ARGUMENT_REQUIRED"), "{method} {url}: {v}");
                continue;
            }
            assert_eq!((status, reason(&v)), (404, "COMMAND_NOT_AVAILABLE"), "{method} {url}: {v}");
            assert!(v["message"].as_str().unwrap().contains(op["operationId"].as_str().unwrap()), "{v}");
        }
    }
    assert!(operations >= 30, "friends, groups and notifications are documented: {operations}");

    // What is not documented is not served.
    let (status, v) = call(addr, "GET", "/v1/im/nothing-here", Some(&token), "").await;
    assert_eq!((status, reason(&v)), (404, "NO_ROUTE"));
    let (status, v) = call(addr, "PATCH", "/v1/im/friends", Some(&token), "").await;
    assert_eq!((status, reason(&v)), (405, "METHOD_NOT_ALLOWED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keys_tokens_and_bodies_get_clear_errors() {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[]).await;
    let addr = node.addr();
    let mut c = Client::connect(addr).await;
    let (uid, token) = c.signup("imbad").await;

    let (status, text) =
        http_with(addr, "GET", "/v1/im/friends", &[("Authorization", &format!("Token {token}"))], "").await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, reason(&v)), (403, "API_KEY_REQUIRED"), "no API key");

    let (status, v) = call(addr, "GET", "/v1/im/friends", Some("not-a-token"), "").await;
    assert_eq!((status, reason(&v)), (401, "TOKEN_INVALID"));
    let mut forged = token.clone();
    forged.replace_range(forged.len() - 2.., if token.ends_with("AA") { "BB" } else { "AA" });
    let (status, v) = call(addr, "GET", "/v1/im/friends", Some(&forged), "").await;
    assert_eq!((status, reason(&v)), (401, "TOKEN_INVALID"), "a tampered token");

    let (status, v) = call(addr, "POST", "/v1/im/friends/requests", Some(&token), "[1, 2]").await;
    assert_eq!((status, reason(&v)), (400, "BAD_JSON"), "the body must be an object");
    let (status, v) = call(addr, "POST", "/v1/im/friends/requests", Some(&token), "{not json").await;
    assert_eq!((status, reason(&v)), (400, "BAD_JSON"));
    let big = format!("{{\"message\":\"{}\"}}", "x".repeat(70 * 1024));
    let (status, v) = call(addr, "POST", "/v1/im/friends/requests", Some(&token), &big).await;
    assert_eq!((status, reason(&v)), (413, "BODY_TOO_LARGE"));

    // A password change revokes the token for the API as for the socket.
    let ctrl = c
        .req(
            "acc",
            serde_json::json!({ "user": uid, "scheme": "basic",
                "secret": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "imbad:another-secret1"),
                "tmpscheme": "basic",
                "tmpsecret": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "imbad:secret1") }),
        )
        .await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let (status, v) = call(addr, "GET", "/v1/im/friends", Some(&token), "").await;
    assert_eq!((status, reason(&v)), (401, "TOKEN_INVALID"), "revoked by the password change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_over_the_api_rate_gets_429_in_the_error_shape() {
    let data = tempfile::tempdir().unwrap();
    let node =
        start(data.path(), &[("PALAVER_LIMITS__API_RATE_PER_SECOND", "1"), ("PALAVER_LIMITS__API_RATE_BURST", "3")])
            .await;
    let addr = node.addr();
    let (_, token) = Client::connect(addr).await.signup("imrate").await;
    let (_, other) = Client::connect(addr).await.signup("imrate2").await;
    for i in 0..3 {
        let (status, v) = call(addr, "GET", "/v1/im/notifications/unread-count", Some(&token), "").await;
        assert_eq!(status, 200, "request {i} is within the burst: {v}");
    }
    let (status, v) = call(addr, "GET", "/v1/im/notifications/unread-count", Some(&token), "").await;
    assert_eq!((status, reason(&v)), (429, "RATE_LIMITED"), "{v}");
    assert_eq!(v["code"], 429);
    assert!(v["message"].as_str().unwrap().contains("retry in"), "{v}");
    let (status, _) = call(addr, "GET", "/v1/im/notifications/unread-count", Some(&other), "").await;
    assert_eq!(status, 200, "another user has a budget of their own");
}
