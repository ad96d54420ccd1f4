//! Each provider against a local server that checks the request as the provider documents it: the webhook's
//! signed POST, FCM HTTP v1's JWT-bearer grant (RS256, `token_uri` honoured, the token cached) and its send,
//! JPush v3's Basic-authenticated push; and how each maps the provider's errors (token gone, 429 with
//! `Retry-After`, 5xx, a refusal).

mod common;

use base64::Engine;
use common::Provider;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use palaver_core::{TenantId, UserId};
use palaver_push::{
    FCM_SCOPE, FcmConfig, FcmProvider, JpushConfig, JpushProvider, ServiceAccount, WebhookConfig, WebhookProvider,
    signature,
};
use serde_json::json;
use std::collections::BTreeMap;

const KEY: &str = include_str!("fixtures/test-rsa.pem");
const PUBLIC: &str = include_str!("fixtures/test-rsa.pub.pem");

fn device(provider: &str) -> Device {
    Device {
        user: UserId(42),
        device_id: "d1".into(),
        platform: "android".into(),
        provider: provider.into(),
        token: "tok-abc".into(),
        app: "app".into(),
        language: "en".into(),
        last_seen: 1,
    }
}

fn message(silent: bool) -> PushMessage {
    let data: BTreeMap<String, String> =
        [("topic", "grpX"), ("seq", "7"), ("tenant_id", "3"), ("type", "group_message")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    PushMessage { data, silent, body: if silent { String::new() } else { "hello".into() } }
}

#[tokio::test]
async fn webhook_posts_signed_json_and_maps_errors() {
    let server = Provider::start().await;
    let secret = "s3cret";
    let hook =
        WebhookProvider::new(WebhookConfig { url: format!("{}/hook", server.base), secret: secret.into() }).unwrap();
    server.then([
        (200, vec![], "{}".into()),
        (410, vec![], "{}".into()),
        (503, vec![("retry-after", "7".into())], "busy".into()),
        (400, vec![], "bad".into()),
    ]);
    hook.send(TenantId(3), &device("webhook"), &message(false)).await.unwrap();
    let seen = &server.requests()[0];
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("POST", "/hook"));
    assert_eq!(seen.header("content-type"), "application/json");
    let ts: u64 = seen.header("x-palaver-timestamp").parse().expect("a Unix seconds timestamp");
    assert_eq!(seen.header("x-palaver-signature"), signature(secret.as_bytes(), ts, &seen.body));
    assert_ne!(seen.header("x-palaver-signature"), signature(b"other", ts, &seen.body));
    let body = seen.json();
    assert_eq!(body["tenant_id"], "3");
    assert_eq!(body["user"], UserId(42).to_string());
    assert_eq!(body["device"], json!({"id": "d1", "platform": "android", "token": "tok-abc"}));
    assert_eq!((body["silent"].clone(), body["body"].clone()), (json!(false), json!("hello")));
    assert_eq!(body["data"]["seq"], "7");
    let d = device("webhook");
    assert_eq!(hook.send(TenantId(3), &d, &message(false)).await, Err(PushError::Unregistered));
    assert!(matches!(
        hook.send(TenantId(3), &d, &message(false)).await,
        Err(PushError::Retry { after_ms: Some(7000), .. })
    ));
    assert!(matches!(hook.send(TenantId(3), &d, &message(false)).await, Err(PushError::Failed { .. })));
}

/// A provider's endpoint may be a tenant's: an error answer whose body never ends is read up to a bound, not
/// until the request's time runs out (nor into memory whole), and the push is retried on its status.
#[tokio::test]
async fn an_endless_error_answer_is_read_only_up_to_a_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
        }
        let _ = s.write_all(b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n").await;
        let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, "x".repeat(16 * 1024));
        // Until the client hangs up.
        while s.write_all(chunk.as_bytes()).await.is_ok() {}
    });
    let hook = WebhookProvider::new(WebhookConfig { url, secret: "s".into() }).unwrap();
    let started = std::time::Instant::now();
    let outcome = hook.send(TenantId(3), &device("webhook"), &message(false)).await;
    let Err(PushError::Retry { reason, .. }) = outcome else { panic!("a 500 is retried: {outcome:?}") };
    assert!(reason.starts_with("HTTP 500: xxx"), "the status decides, with the answer's start: {reason}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "not read until the timeout");
}

fn fcm(server: &Provider) -> FcmProvider {
    let account = ServiceAccount {
        project_id: "proj-1".into(),
        client_email: "push@proj-1.iam.gserviceaccount.com".into(),
        private_key: KEY.into(),
        token_uri: format!("{}/token", server.base),
    };
    FcmProvider::new(FcmConfig { account, endpoint: server.base.clone() }).unwrap()
}

#[tokio::test]
async fn fcm_grants_a_token_once_and_sends_v1_messages() {
    let server = Provider::start().await;
    server.always(
        "/token",
        (200, vec![], json!({"access_token": "at-1", "expires_in": 3600, "token_type": "Bearer"}).to_string()),
    );
    let p = fcm(&server);
    p.send(TenantId(3), &device("fcm"), &message(false)).await.unwrap();
    p.send(TenantId(3), &device("fcm"), &message(true)).await.unwrap();

    // The grant: form-encoded JWT bearer to the account's token_uri, the JWT signed RS256 with its key.
    let grants = server.to("/token");
    assert_eq!(grants.len(), 1, "the token is cached until it expires");
    let g = &grants[0];
    assert_eq!(g.method, "POST");
    assert_eq!(g.header("content-type"), "application/x-www-form-urlencoded");
    let form: BTreeMap<String, String> = String::from_utf8(g.body.clone())
        .unwrap()
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_owned(), v.replace("%3A", ":"))
        })
        .collect();
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
    let key = jsonwebtoken::DecodingKey::from_rsa_pem(PUBLIC.as_bytes()).unwrap();
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    v.set_audience(&[format!("{}/token", server.base)]);
    let claims =
        jsonwebtoken::decode::<serde_json::Value>(&form["assertion"], &key, &v).expect("a valid RS256 JWT").claims;
    assert_eq!(claims["iss"], "push@proj-1.iam.gserviceaccount.com");
    assert_eq!(claims["scope"], FCM_SCOPE);
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 3600);

    // The sends: v1 path, bearer token, data message with android priority and the apns block.
    let sends = server.to("/v1/");
    assert_eq!(sends.len(), 2);
    for s in &sends {
        assert_eq!((s.method.as_str(), s.path.as_str()), ("POST", "/v1/projects/proj-1/messages:send"));
        assert_eq!(s.header("authorization"), "Bearer at-1");
    }
    let alert = sends[0].json();
    assert_eq!(alert["message"]["token"], "tok-abc");
    assert_eq!(alert["message"]["data"]["topic"], "grpX");
    assert_eq!(alert["message"]["android"]["priority"], "high");
    assert_eq!(alert["message"]["apns"]["headers"]["apns-push-type"], "alert");
    assert_eq!(alert["message"]["apns"]["payload"]["aps"]["alert"]["body"], "hello");
    let silent = sends[1].json();
    assert_eq!(silent["message"]["android"]["priority"], "normal");
    assert_eq!(silent["message"]["apns"]["payload"]["aps"]["content-available"], 1);
}

#[tokio::test]
async fn fcm_maps_unregistered_retry_after_and_refusals() {
    let server = Provider::start().await;
    server.always("/token", (200, vec![], json!({"access_token": "at-1", "expires_in": 3600}).to_string()));
    let unregistered = json!({"error": {"code": 404, "status": "NOT_FOUND", "details": [
        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}});
    server.then([
        (404, vec![], unregistered.to_string()),
        (429, vec![("retry-after", "3".into())], json!({"error": {"status": "RESOURCE_EXHAUSTED"}}).to_string()),
        (500, vec![], "{}".into()),
        (400, vec![], json!({"error": {"status": "INVALID_ARGUMENT"}}).to_string()),
    ]);
    let p = fcm(&server);
    let d = device("fcm");
    assert_eq!(p.send(TenantId(1), &d, &message(false)).await, Err(PushError::Unregistered));
    assert!(matches!(
        p.send(TenantId(1), &d, &message(false)).await,
        Err(PushError::Retry { after_ms: Some(3000), .. })
    ));
    assert!(matches!(p.send(TenantId(1), &d, &message(false)).await, Err(PushError::Retry { after_ms: None, .. })));
    assert!(matches!(p.send(TenantId(1), &d, &message(false)).await, Err(PushError::Failed { .. })));
}

#[tokio::test]
async fn jpush_pushes_by_registration_id_with_basic_auth() {
    let server = Provider::start().await;
    let p = JpushProvider::new(JpushConfig {
        app_key: "appkey".into(),
        master_secret: "master".into(),
        endpoint: server.base.clone(),
    })
    .unwrap();
    server.then([
        (200, vec![], json!({"sendno": "0", "msg_id": "1"}).to_string()),
        (200, vec![], json!({"sendno": "0", "msg_id": "2"}).to_string()),
        (400, vec![], json!({"error": {"code": 1011, "message": "cannot find user by this audience"}}).to_string()),
        (503, vec![], "{}".into()),
    ]);
    p.send(TenantId(1), &device("jpush"), &message(false)).await.unwrap();
    p.send(TenantId(1), &device("jpush"), &message(true)).await.unwrap();
    let seen = server.requests();
    let basic = base64::engine::general_purpose::STANDARD.encode("appkey:master");
    for s in &seen {
        assert_eq!((s.method.as_str(), s.path.as_str()), ("POST", "/v3/push"));
        assert_eq!(s.header("authorization"), format!("Basic {basic}"));
        assert_eq!(s.json()["audience"], json!({"registration_id": ["tok-abc"]}));
        assert_eq!(s.json()["platform"], "all");
    }
    let alert = seen[0].json();
    assert_eq!(alert["notification"]["alert"], "hello");
    assert_eq!(alert["notification"]["android"]["extras"]["seq"], "7");
    let silent = seen[1].json();
    assert!(silent.get("notification").is_none(), "a silent push shows nothing");
    assert_eq!(silent["message"]["extras"]["topic"], "grpX");
    let d = device("jpush");
    assert_eq!(p.send(TenantId(1), &d, &message(false)).await, Err(PushError::Unregistered));
    assert!(matches!(p.send(TenantId(1), &d, &message(false)).await, Err(PushError::Retry { .. })));
}
