//! The admin HTTP API's contract: the OpenAPI document lists exactly the `/v1/admin` routes the router serves,
//! every one of them takes the admin bearer token, and whatever each answers fits its documented schema (a
//! typed 200 body, or the one error body with a reason of the table).

mod common;

use common::{http_with, start};
use serde_json::Value;

const ADMIN: &str = "admin-api-test-token";

/// Fills a documented path's `{parameters}` with plausible values.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{tenant}" => "1",
            "{name}" => "moderation",
            "{user}" => "usrAAAAAAAAAAA",
            "{topic}" => "grpAAAAAAAAAAA",
            "{id}" => "never-ran",
            "{seq}" => "1",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The schema a `$ref` names, from the document's components.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling {r}")),
        None => schema,
    }
}

/// True if `body` has every property `schema` requires (any branch of a `oneOf`).
fn fits(doc: &Value, schema: &Value, body: &Value) -> bool {
    let schema = resolve(doc, schema);
    if let Some(branches) = schema["oneOf"].as_array() {
        return branches.iter().any(|b| fits(doc, b, body));
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    !required.is_empty() && required.iter().all(|k| k.as_str().is_some_and(|k| body.get(k).is_some()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_and_the_admin_router_agree_and_every_route_takes_the_token() {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), &[("PALAVER_ADMIN__TOKEN", ADMIN)]).await;
    let addr = node.addr();
    let bearer = format!("Bearer {ADMIN}");

    let (status, text) = http_with(addr, "GET", "/v1/openapi.json", &[], "").await;
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut operations = 0;
    for (path, methods) in doc["paths"].as_object().unwrap().iter().filter(|(p, _)| p.starts_with("/v1/admin/")) {
        for (method, op) in methods.as_object().unwrap() {
            operations += 1;
            let (method, url) = (method.to_uppercase(), concrete(path));
            assert_eq!(op["security"], serde_json::json!([{ "adminToken": [] }]), "{method} {path}");
            let body = if op.get("requestBody").is_some() { "{}" } else { "" };
            // Without the token: the route exists (not NO_ROUTE) and refuses.
            let (status, text) = http_with(addr, &method, &url, &[], body).await;
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!((status, v["reason"].as_str()), (401, Some("ADMIN_TOKEN_REQUIRED")), "{method} {url}: {v}");
            // With it: an answer of the documented shape, whatever this node (no plugins) makes of it.
            let (status, text) = http_with(addr, &method, &url, &[("Authorization", &bearer)], body).await;
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {url}: {text}"));
            let reason = v["reason"].as_str().unwrap_or_default();
            assert!(reason != "NO_ROUTE" && reason != "METHOD_NOT_ALLOWED", "{method} {url}: {v}");
            let documented = op["responses"][status.to_string()]["content"]["application/json"]["schema"].clone();
            assert!(documented.is_object(), "{method} {url}: status {status} is not documented");
            assert!(fits(&doc, &documented, &v), "{method} {url}: {status} {v} does not fit {documented}");
            if status != 200 {
                assert_eq!(v["code"], status, "{method} {url}: {v}");
            }
        }
    }
    assert_eq!(
        operations, 26,
        "plugins (releases and rollouts too), tenant plugins, push settings, file settings, account settings, accounts and tokens, user actions, commands, \
         reports, held messages"
    );

    // A body the endpoint's type does not know is refused before anything runs.
    let extra = r#"{"action":"release","colour":1}"#;
    let url = "/v1/admin/tenants/1/topics/grpAAAAAAAAAAA/messages/1/audit";
    let (status, text) = http_with(addr, "POST", url, &[("Authorization", &bearer)], extra).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, v["reason"].as_str()), (400, Some("BAD_ARGUMENT")), "{v}");
    // What is not documented is not served.
    let (status, text) =
        http_with(addr, "POST", "/v1/admin/tenants/1/users/usrX/explode", &[("Authorization", &bearer)], "").await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, v["reason"].as_str()), (404, Some("NO_ROUTE")), "{v}");
    let (status, text) = http_with(addr, "DELETE", "/v1/admin/plugins", &[("Authorization", &bearer)], "").await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, v["reason"].as_str()), (405, Some("METHOD_NOT_ALLOWED")), "{v}");
}
