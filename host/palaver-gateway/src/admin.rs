//! The admin HTTP API (`/v1/admin/…`), behind a bearer token. The gateway knows only the [`Admin`] trait; the
//! server implements it over whatever it administers (the plugin registry first).

use crate::Shared;
use crate::http::{Body, json};
use crate::users;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json as j};

/// What the admin API can do.
#[async_trait::async_trait]
pub trait Admin: Send + Sync {
    /// Every plugin: name, version, hash, state, last error, call and fault counts.
    fn plugins(&self) -> Value;
    /// Loads whatever changed in the plugins directory.
    async fn rescan(&self) -> Value;
    /// Reloads one plugin from its manifest; an error keeps the old version running.
    async fn reload(&self, name: &str) -> Result<Value, String>;
    /// Brings back the previous version of a plugin.
    async fn rollback(&self, name: &str) -> Result<Value, String>;
    /// A tenant's choices for a plugin: enabled and settings (with defaults merged in).
    fn tenant_plugin(&self, tenant: u64, name: &str) -> Result<Value, String>;
    /// Changes a tenant's choices: `{"enabled": bool|null, "settings": {…}|null}`; null restores the default.
    fn set_tenant_plugin(&self, tenant: u64, name: &str, change: &Value) -> Result<Value, String>;
}

/// Handles `/v1/admin/…`. Without a configured admin the API does not exist (404).
pub(crate) async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let Some((admin, token)) = shared.admin.as_ref() else {
        return reply(StatusCode::NOT_FOUND, j!({ "code": 404, "message": "no admin API on this node" }));
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
        return reply(StatusCode::UNAUTHORIZED, j!({ "code": 401, "message": "admin token required" }));
    }
    let path = req.uri().path().trim_end_matches('/').to_owned();
    let parts: Vec<&str> = path.trim_start_matches("/v1/admin/").split('/').collect();
    match (req.method().clone(), parts.as_slice()) {
        (Method::GET, ["plugins"]) => reply(StatusCode::OK, admin.plugins()),
        (Method::POST, ["plugins", "rescan"]) => reply(StatusCode::OK, admin.rescan().await),
        (Method::POST, ["plugins", name, "reload"]) => outcome(admin.reload(name).await),
        (Method::POST, ["plugins", name, "rollback"]) => outcome(admin.rollback(name).await),
        (Method::GET, ["tenants", tenant, "plugins", name]) => match tenant.parse::<u64>() {
            Ok(t) => outcome(admin.tenant_plugin(t, name)),
            Err(_) => reply(StatusCode::BAD_REQUEST, j!({ "code": 400, "message": "tenant must be a number" })),
        },
        (Method::PUT, ["tenants", tenant, "plugins", name]) => {
            let Ok(t) = tenant.parse::<u64>() else {
                return reply(StatusCode::BAD_REQUEST, j!({ "code": 400, "message": "tenant must be a number" }));
            };
            let name = name.to_string();
            let body = match http_body_util::Limited::new(req.into_body(), 64 * 1024).collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => {
                    return reply(StatusCode::PAYLOAD_TOO_LARGE, j!({ "code": 413, "message": "body too large" }));
                }
            };
            match serde_json::from_slice::<Value>(&body) {
                Ok(change) if change.is_object() => outcome(admin.set_tenant_plugin(t, &name, &change)),
                _ => reply(StatusCode::BAD_REQUEST, j!({ "code": 400, "message": "the body must be a JSON object" })),
            }
        }
        (Method::POST, ["tenants", tenant, "users", user, action]) => {
            let (tenant, user, action) = (tenant.to_string(), user.to_string(), action.to_string());
            let body = match read_object(req).await {
                Ok(b) => b,
                Err(resp) => return resp,
            };
            users::handle(&shared.service, &tenant, &user, &action, &body).await
        }
        _ => reply(StatusCode::NOT_FOUND, j!({ "code": 404, "message": "no such admin endpoint" })),
    }
}

/// Reads a small JSON object body; an empty body is `{}`.
async fn read_object(req: Request<Incoming>) -> Result<Value, Response<Body>> {
    let body = match http_body_util::Limited::new(req.into_body(), 64 * 1024).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(reply(StatusCode::PAYLOAD_TOO_LARGE, j!({ "code": 413, "message": "body too large" }))),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(j!({}));
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(reply(StatusCode::BAD_REQUEST, j!({ "code": 400, "message": "the body must be a JSON object" }))),
    }
}

/// The admin API of a node without plugins: the plugin endpoints answer that there are none.
#[derive(Debug, Default)]
pub struct NoPlugins;

#[async_trait::async_trait]
impl Admin for NoPlugins {
    fn plugins(&self) -> Value {
        j!({ "plugins": [] })
    }
    async fn rescan(&self) -> Value {
        j!({ "plugins": [] })
    }
    async fn reload(&self, _name: &str) -> Result<Value, String> {
        Err("no plugins on this node".into())
    }
    async fn rollback(&self, _name: &str) -> Result<Value, String> {
        Err("no plugins on this node".into())
    }
    fn tenant_plugin(&self, _tenant: u64, _name: &str) -> Result<Value, String> {
        Err("no plugins on this node".into())
    }
    fn set_tenant_plugin(&self, _tenant: u64, _name: &str, _change: &Value) -> Result<Value, String> {
        Err("no plugins on this node".into())
    }
}

fn outcome(result: Result<Value, String>) -> Response<Body> {
    match result {
        Ok(v) => reply(StatusCode::OK, v),
        Err(message) => reply(StatusCode::CONFLICT, j!({ "code": 409, "message": message })),
    }
}

pub(crate) fn reply(status: StatusCode, body: Value) -> Response<Body> {
    json(status, Bytes::from(body.to_string()))
}

/// Compares secrets without leaking how much of a guess was right through timing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() || b.is_empty() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_compare_exactly() {
        assert!(super::constant_time_eq(b"secret", b"secret"));
        assert!(!super::constant_time_eq(b"secreT", b"secret"));
        assert!(!super::constant_time_eq(b"", b""), "an empty token never matches");
        assert!(!super::constant_time_eq(b"sec", b"secret"));
    }
}
