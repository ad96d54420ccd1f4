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
