//! Identity for app backends, end to end on one embedded node: accounts created and found through the admin
//! API, tokens minted for them and revoked (the open session closes, the old token is refused), and
//! `{login scheme:"jwt"}` with an HS256 key and an EdDSA key that provisions accounts.

mod common;

use base64::Engine;
use common::{Client, config, http_with};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use palaver_server::jwt_keys::JwtKeyConfig;
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;

const ADMIN: &str = "identity-test-admin-token";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

async fn admin(addr: SocketAddr, method: &str, path: &str, body: Value) -> (u16, Value) {
    let bearer = format!("Bearer {ADMIN}");
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let (status, text) = http_with(addr, method, path, &[("Authorization", &bearer)], &body).await;
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {path}: {text}")))
}

/// Logs a fresh connection in with `scheme` and `secret`; the login's ctrl and the client.
async fn login(addr: SocketAddr, scheme: &str, secret: &str) -> (Value, Client) {
    let mut c = Client::connect(addr).await;
    c.req("hi", json!({ "ver": "0.25.3" })).await;
    let ctrl = c.req("login", json!({ "scheme": scheme, "secret": secret })).await;
    (ctrl, c)
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn hs256(secret: &[u8], claims: Value) -> String {
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret)).unwrap()
}

/// A PEM block of `der`.
fn pem(label: &str, der: &[u8]) -> String {
    let body: Vec<String> = B64.encode(der).as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into()).collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", body.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_creates_finds_and_logs_in_its_users() {
    let data = tempfile::tempdir().unwrap();
    let hs_secret = [42u8; 32];
    // An Ed25519 key pair as a backend holds it: the private key signs, the node reads the public key's PEM.
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let mut spki = vec![0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
    spki.extend_from_slice(pair.public_key().as_ref());
    let public_file = data.path().join("backend.pem");
    std::fs::write(&public_file, pem("PUBLIC KEY", &spki)).unwrap();
    let ed_signer = EncodingKey::from_ed_pem(pem("PRIVATE KEY", pkcs8.as_ref()).as_bytes()).unwrap();

    let mut cfg = config(data.path(), &[("PALAVER_ADMIN__TOKEN", ADMIN)]);
    cfg.auth.jwt.max_lifetime_seconds = 600;
    cfg.auth.jwt.keys = vec![
        JwtKeyConfig { tenant: 1, algorithm: "HS256".into(), secret: B64.encode(hs_secret), ..Default::default() },
        JwtKeyConfig {
            tenant: 1,
            algorithm: "EdDSA".into(),
            public_key_file: public_file.display().to_string(),
            issuer: "crm".into(),
            auto_provision: true,
            ..Default::default()
        },
    ];
    let node = palaver_server::wiring::start(cfg).await.unwrap();
    let addr = node.addr();

    // Create, then find by every key.
    let new = json!({ "login": "Carol", "password": "s3cret", "external_id": "crm-42", "public": { "fn": "Carol" } });
    let (status, carol) = admin(addr, "POST", "/v1/admin/tenants/1/users", new.clone()).await;
    assert_eq!(status, 200, "{carol}");
    assert_eq!((carol["login"].as_str(), carol["external_id"].as_str()), (Some("carol"), Some("crm-42")));
    assert_eq!(carol["state"], "active");
    let uid = carol["user"].as_str().unwrap().to_owned();
    for path in ["/v1/admin/tenants/1/users?external_id=crm-42", "/v1/admin/tenants/1/users?login=CAROL"] {
        let (status, found) = admin(addr, "GET", path, Value::Null).await;
        assert_eq!((status, found["user"].as_str()), (200, Some(uid.as_str())), "{path}: {found}");
    }
    let (status, found) = admin(addr, "GET", &format!("/v1/admin/tenants/1/users/{uid}"), Value::Null).await;
    assert_eq!((status, found["public"]["fn"].as_str()), (200, Some("Carol")));
    let (status, e) = admin(addr, "GET", "/v1/admin/tenants/1/users?external_id=nobody", Value::Null).await;
    assert_eq!((status, e["reason"].as_str()), (404, Some("USER_NOT_FOUND")));
    let again = json!({ "external_id": "crm-42" });
    let (status, e) = admin(addr, "POST", "/v1/admin/tenants/1/users", again).await;
    assert_eq!((status, e["reason"].as_str()), (409, Some("DUPLICATE_CREDENTIAL")), "{e}");
    for bad in [json!({ "login": "dave" }), json!({}), json!({ "external_id": "" })] {
        let (status, e) = admin(addr, "POST", "/v1/admin/tenants/1/users", bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {e}");
    }
    // The password works with the basic scheme.
    let (ctrl, _basic) = login(addr, "basic", &B64.encode("carol:s3cret")).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["params"]["user"].as_str()), (Some(200), Some(uid.as_str())));

    // A minted token logs in; revoking closes that session and voids the token.
    let mint = format!("/v1/admin/tenants/1/users/{uid}/tokens");
    let (status, e) = admin(addr, "POST", &mint, json!({ "ttl_seconds": 5 })).await;
    assert_eq!(status, 400, "a token lives at least 60 s: {e}");
    let (status, minted) = admin(addr, "POST", &mint, json!({ "ttl_seconds": 300 })).await;
    assert_eq!((status, minted["user"].as_str()), (200, Some(uid.as_str())), "{minted}");
    let token = minted["token"].as_str().unwrap().to_owned();
    let (ctrl, mut session) = login(addr, "token", &token).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["params"]["user"].as_str()), (Some(200), Some(uid.as_str())));
    let (status, revoked) = admin(addr, "DELETE", &mint, Value::Null).await;
    assert_eq!((status, revoked["user"].as_str()), (200, Some(uid.as_str())), "{revoked}");
    let mut closed = false;
    while let Some(frame) = session.next_within(Duration::from_secs(5)).await {
        if frame.is_string() {
            continue;
        }
        closed |= frame["ctrl"]["code"].as_i64().is_some_and(|c| c >= 400 || c == 205);
    }
    assert!(closed, "the revoked session is told and closed");
    let (ctrl, _) = login(addr, "token", &token).await;
    assert_eq!(ctrl["code"], 401, "the old token is void: {ctrl}");

    // HS256: the tenant's shared secret signs a token for the backend's id.
    let exp = now() + 120;
    let (ctrl, _jwt) = login(addr, "jwt", &hs256(&hs_secret, json!({ "sub": "crm-42", "exp": exp }))).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["params"]["user"].as_str()), (Some(200), Some(uid.as_str())), "{ctrl}");
    assert!(ctrl["params"]["token"].is_string(), "the login hands out Palaver's own token");
    let refused = [
        hs256(&[1u8; 32], json!({ "sub": "crm-42", "exp": exp })),
        hs256(&hs_secret, json!({ "sub": "crm-42", "exp": now() - 120 })),
        hs256(&hs_secret, json!({ "sub": "crm-42", "exp": now() + 3600 })),
        hs256(&hs_secret, json!({ "sub": "crm-42" })),
        hs256(&hs_secret, json!({ "sub": "crm-unknown", "exp": exp })),
        "garbage".to_owned(),
    ];
    for (i, jwt) in refused.iter().enumerate() {
        let (ctrl, _) = login(addr, "jwt", jwt).await;
        assert_eq!(ctrl["code"], 401, "refused token #{i}: {ctrl}");
    }

    // EdDSA with provisioning: a new subject gets an account named after the token, then keeps it.
    let ed = |claims: Value| jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &ed_signer).unwrap();
    let claims = json!({ "sub": "crm-77", "exp": exp, "iss": "crm", "name": "Provisioned" });
    let (first, _a) = login(addr, "jwt", &ed(claims.clone())).await;
    assert_eq!(first["code"], 200, "{first}");
    let (second, _b) = login(addr, "jwt", &ed(claims)).await;
    assert_eq!(first["params"]["user"], second["params"]["user"], "one account per subject");
    let (_, made) = admin(addr, "GET", "/v1/admin/tenants/1/users?external_id=crm-77", Value::Null).await;
    assert_eq!(
        (made["user"].clone(), made["public"]["fn"].as_str()),
        (first["params"]["user"].clone(), Some("Provisioned"))
    );
    assert!(made["login"].is_null(), "a provisioned account has no password login: {made}");
    let (wrong_iss, _) = login(addr, "jwt", &ed(json!({ "sub": "crm-78", "exp": exp, "iss": "evil" }))).await;
    assert_eq!(wrong_iss["code"], 401);

    // A suspended account is refused whatever token it brings.
    let (status, _) = admin(addr, "POST", &format!("/v1/admin/tenants/1/users/{uid}/disable"), json!({})).await;
    assert_eq!(status, 200);
    let (ctrl, _) = login(addr, "jwt", &hs256(&hs_secret, json!({ "sub": "crm-42", "exp": exp }))).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");
    let (status, e) = admin(addr, "POST", &mint, json!({})).await;
    assert_eq!(status, 403, "no token for a suspended account: {e}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_without_keys_does_not_take_the_jwt_scheme() {
    let data = tempfile::tempdir().unwrap();
    let node = common::start(data.path(), &[]).await;
    let jwt = hs256(&[42u8; 32], json!({ "sub": "crm-42", "exp": now() + 60 }));
    let (ctrl, _) = login(node.addr(), "jwt", &jwt).await;
    assert_eq!((ctrl["code"].as_i64(), ctrl["text"].as_str()), (Some(401), Some("unknown authentication scheme")));
    node.shutdown().await;
}
