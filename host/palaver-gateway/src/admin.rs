//! The admin HTTP API (`/v1/admin/…`), behind a bearer token. The gateway knows only the [`Admin`] trait; the
//! server implements it over whatever it administers (the plugin registry first). The endpoints are the entries
//! of one route table (`routes.rs`), which the OpenAPI document reads too; every answer is a typed body
//! (`palaver_api::bodies::admin`) and every refusal has the one error shape of both HTTP APIs
//! (`palaver_api::ErrorBody`).

mod releases;
pub(crate) mod routes;

pub use releases::{AdminRefusal, PluginUpload};

use crate::Shared;
use crate::http::{Body, error, json, service_error};
use crate::identity::{self, Ask};
use crate::users;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use palaver_api::Reason;
use palaver_api::bodies::admin as a;
use palaver_core::ports::AuditEvent;
use palaver_core::{TenantId, now_millis};
use palaver_service::new_event_id;
use routes::{Op, ROUTES};
use serde::Serialize;
use serde_json::{Value, json as j};

/// What the admin API can do.
#[async_trait::async_trait]
pub trait Admin: Send + Sync {
    /// Every plugin: name, version, hash, state, last error, call and fault counts; the cluster's rollouts and
    /// what each node runs.
    async fn plugins(&self) -> a::PluginList;
    /// The largest plugin upload, in bytes.
    fn upload_limit(&self) -> usize {
        0
    }
    /// Checks, stores and rolls out an uploaded release (to the canary's tenants first, if it names some).
    async fn upload(&self, _upload: PluginUpload) -> Result<a::PluginReleased, AdminRefusal> {
        Err(AdminRefusal::new(Reason::PluginsOff, "no plugins on this node"))
    }
    /// Replaces a plugin's rollout.
    async fn set_rollout(&self, _name: &str, _change: &a::RolloutChange) -> Result<a::PluginRolloutInfo, AdminRefusal> {
        Err(AdminRefusal::new(Reason::PluginsOff, "no plugins on this node"))
    }
    /// Loads whatever changed in the plugins directory.
    async fn rescan(&self) -> a::LoadReport;
    /// Reloads one plugin from its manifest; an error keeps the old version running.
    async fn reload(&self, name: &str) -> Result<a::LoadReport, String>;
    /// Brings back the previous version of a plugin.
    async fn rollback(&self, name: &str) -> Result<a::RolledBack, String>;
    /// A tenant's choices for a plugin: enabled and settings (with defaults merged in).
    fn tenant_plugin(&self, tenant: u64, name: &str) -> Result<a::TenantPlugin, String>;
    /// Changes a tenant's choices (an [`a::TenantPluginChange`] the gateway has checked): `enabled`, `settings`
    /// and `failure`, a field left out unchanged and null restoring the default.
    async fn set_tenant_plugin(&self, tenant: u64, name: &str, change: &Value) -> Result<a::TenantPlugin, String>;
}

/// True if the request carries `Authorization: Bearer <token>`.
pub(crate) fn bearer_matches(headers: &http::HeaderMap, token: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    constant_time_eq(given.as_bytes(), token.as_bytes())
}

/// The route pattern of an admin path, for metrics (ids and names as `{…}`, so the series stay bounded).
pub(crate) fn route_path(path: &str) -> &'static str {
    let parts: Vec<&str> = path.trim_end_matches('/').trim_start_matches("/v1/admin/").split('/').collect();
    match parts.as_slice() {
        ["plugins"] => "/v1/admin/plugins",
        ["plugins", "rescan"] => "/v1/admin/plugins/rescan",
        ["plugins", _, "rollout"] => "/v1/admin/plugins/{name}/rollout",
        ["plugins", _, "reload"] => "/v1/admin/plugins/{name}/reload",
        ["plugins", _, "rollback"] => "/v1/admin/plugins/{name}/rollback",
        ["tenants", _, "plugins", _] => "/v1/admin/tenants/{tenant}/plugins/{name}",
        ["tenants", _, "push"] => "/v1/admin/tenants/{tenant}/push",
        ["tenants", _, "users"] => "/v1/admin/tenants/{tenant}/users",
        ["tenants", _, "users", _] => "/v1/admin/tenants/{tenant}/users/{user}",
        ["tenants", _, "users", _, "tokens"] => "/v1/admin/tenants/{tenant}/users/{user}/tokens",
        ["tenants", _, "users", _, _] => "/v1/admin/tenants/{tenant}/users/{user}/{action}",
        ["tenants", _, "commands"] => "/v1/admin/tenants/{tenant}/commands",
        ["tenants", _, "commands", _] => "/v1/admin/tenants/{tenant}/commands/{id}",
        ["tenants", _, "reports"] => "/v1/admin/tenants/{tenant}/reports",
        ["tenants", _, "topics", _, "messages", _, "audit"] => {
            "/v1/admin/tenants/{tenant}/topics/{topic}/messages/{seq}/audit"
        }
        _ => "/v1/admin/(unknown)",
    }
}

/// Handles `/v1/admin/…`. Without a configured admin the API does not exist (404).
pub(crate) async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let Some((admin, token)) = shared.admin.as_ref() else {
        return error(Reason::AdminApiOff, "no admin API on this node");
    };
    if !bearer_matches(req.headers(), token) {
        return error(Reason::AdminTokenRequired, "admin token required (`Authorization: Bearer …`)");
    }
    let path = req.uri().path().trim_end_matches('/').trim_start_matches("/v1/admin").to_owned();
    let Some((route, params)) = crate::route::find_in(ROUTES, req.method().as_str(), &path) else {
        return if crate::route::path_exists_in(ROUTES, &path) {
            error(Reason::MethodNotAllowed, "this path takes another method")
        } else {
            error(Reason::NoRoute, format!("no admin endpoint {path}; see /v1/openapi.json"))
        };
    };
    let param = |name: &str| params.iter().find(|(k, _)| *k == name).map_or("", |(_, v)| v.as_str()).to_owned();
    let (tenant, name) = (param("tenant"), param("name"));
    if route.op == Op::Upload {
        // A multipart form, not a JSON body.
        if admin.upload_limit() == 0 {
            return error(Reason::PluginsOff, "no plugins on this node");
        }
        let upload = match releases::read(req, admin.upload_limit()).await {
            Ok(u) => u,
            Err(resp) => return resp,
        };
        let result = admin.upload(upload).await;
        let plugin = result.as_ref().map_or_else(|_| "?".to_owned(), |r| format!("{}@{}", r.name, r.version));
        let logged = result.as_ref().map_err(|e| e.message.clone());
        audit_plugin(shared, TenantId::DEFAULT, "plugin.upload", &plugin, &logged).await;
        return refused_or(result);
    }
    let query = req.uri().query().map(str::to_owned);
    let headers = req.headers().clone();
    let body = match route.request {
        Some(request) => {
            let body = match read_object(req).await {
                Ok(b) => b,
                Err(resp) => return resp,
            };
            // The body must read as the endpoint's type (the one its OpenAPI schema comes from).
            if let Err(why) = body.as_object().map_or(Ok(()), |m| (request.check)(m)) {
                let message = format!("the body does not fit {} {}: {why}", route.method, route.path);
                return error(Reason::BadArgument, message);
            }
            body
        }
        None => j!({}),
    };
    let tenant_id = tenant.parse::<u64>().ok();
    let bad_tenant = || error(Reason::BadTenant, "tenant must be a number");
    match route.op {
        Op::Plugins => typed(admin.plugins().await),
        Op::Upload => error(Reason::Internal, "uploads are read above"),
        Op::Rollout => {
            let change: a::RolloutChange = match serde_json::from_value(body) {
                Ok(c) => c,
                Err(e) => return error(Reason::BadArgument, format!("the body does not fit a rollout: {e}")),
            };
            let result = admin.set_rollout(&name, &change).await;
            let logged = result.as_ref().map_err(|e| e.message.clone());
            audit_plugin(shared, TenantId::DEFAULT, "plugin.rollout", &name, &logged).await;
            refused_or(result)
        }
        Op::Rescan => {
            let result = admin.rescan().await;
            audit_plugin(shared, TenantId::DEFAULT, "plugin.deploy", "*", &Ok(result.clone())).await;
            typed(result)
        }
        Op::Reload => {
            let result = admin.reload(&name).await;
            audit_plugin(shared, TenantId::DEFAULT, "plugin.reload", &name, &result).await;
            outcome(result)
        }
        Op::Rollback => {
            let result = admin.rollback(&name).await;
            audit_plugin(shared, TenantId::DEFAULT, "plugin.rollback", &name, &result).await;
            outcome(result)
        }
        Op::TenantPlugin => match tenant_id {
            Some(t) => outcome(admin.tenant_plugin(t, &name)),
            None => bad_tenant(),
        },
        Op::SetTenantPlugin => match tenant_id {
            Some(t) => {
                let result = admin.set_tenant_plugin(t, &name, &body).await;
                audit_plugin(shared, TenantId(t), "plugin.settings", &name, &result).await;
                outcome(result)
            }
            None => bad_tenant(),
        },
        Op::FileSettings | Op::SetFileSettings => match tenant_id {
            Some(t) => file_settings(shared, TenantId(t), route.op == Op::SetFileSettings, &body).await,
            None => bad_tenant(),
        },
        Op::AccountSettings | Op::SetAccountSettings => match tenant_id {
            Some(t) => account_settings(shared, TenantId(t), route.op == Op::SetAccountSettings, &body).await,
            None => bad_tenant(),
        },
        Op::PushSettings | Op::SetPushSettings => match tenant_id {
            Some(t) => push_settings(shared, TenantId(t), route.op == Op::SetPushSettings, &body).await,
            None => bad_tenant(),
        },
        Op::CreateUser => identity::handle(&shared.service, &tenant, Ask::Create(&body)).await,
        Op::FindUser => identity::handle(&shared.service, &tenant, Ask::Find(query.as_deref())).await,
        Op::GetUser => identity::handle(&shared.service, &tenant, Ask::Get(&param("user"))).await,
        Op::MintToken => identity::handle(&shared.service, &tenant, Ask::Mint(&param("user"), &body)).await,
        Op::RevokeTokens => identity::handle(&shared.service, &tenant, Ask::Revoke(&param("user"))).await,
        Op::Disable | Op::Enable | Op::Evict => {
            let action = route.path.rsplit('/').next().unwrap_or_default();
            users::handle(&shared.service, &tenant, &param("user"), action, &headers, &body).await
        }
        Op::Command => users::handle_command(&shared.service, &tenant, &headers, &body).await,
        Op::GetCommand => users::get_command(&shared.service, &tenant, &param("id")).await,
        Op::Reports => users::list_reports(&shared.service, &tenant, query.as_deref()).await,
        Op::ReviewMessage => {
            crate::audit::handle(&shared.service, &tenant, &param("topic"), &param("seq"), &body).await
        }
    }
}

/// `GET` (`set` false) or `PUT` a tenant's push settings; a change is audited in the tenant's log with what is in
/// force after it, secrets hidden.
async fn push_settings(shared: &Shared, tenant: TenantId, set: bool, body: &Value) -> Response<Body> {
    let svc = &shared.service;
    if !set {
        return svc.push_settings(tenant).await.map_or_else(|e| service_error(&e), typed);
    }
    let result = svc.set_push_settings(tenant, body).await;
    audit_settings(shared, tenant, "push.settings", &result).await;
    result.map_or_else(|e| service_error(&e), typed)
}

/// `GET` (`set` false) or `PUT` a tenant's file limits; a change is audited like a push settings change.
async fn file_settings(shared: &Shared, tenant: TenantId, set: bool, body: &Value) -> Response<Body> {
    let svc = &shared.service;
    if !set {
        return svc.file_settings(tenant).await.map_or_else(|e| service_error(&e), typed);
    }
    let result = svc.set_file_settings(tenant, body).await;
    audit_settings(shared, tenant, "files.settings", &result).await;
    result.map_or_else(|e| service_error(&e), typed)
}

async fn account_settings(shared: &Shared, tenant: TenantId, set: bool, body: &Value) -> Response<Body> {
    let svc = &shared.service;
    if !set {
        return svc.account_settings(tenant).await.map_or_else(|e| service_error(&e), typed);
    }
    let result = svc.set_account_settings(tenant, body).await;
    audit_settings(shared, tenant, "accounts.settings", &result).await;
    result.map_or_else(|e| service_error(&e), typed)
}

/// Records a tenant settings change (`action`) in the tenant's audit log, with what is in force after it or why
/// it was refused.
async fn audit_settings<T: Serialize>(
    shared: &Shared,
    tenant: TenantId,
    action: &str,
    result: &Result<T, palaver_service::ServiceError>,
) {
    let detail = match result {
        Ok(v) => j!({ "ok": true, "result": serde_json::to_value(v).unwrap_or_default() }),
        Err(e) => j!({ "ok": false, "error": e.text() }),
    };
    let event = AuditEvent::new(
        new_event_id(),
        tenant,
        action,
        ("admin", None),
        ("tenant", tenant.0.to_string()),
        now_millis(),
    )
    .with_detail(detail);
    if let Err(err) = shared.service.audit(tenant, event).await {
        tracing::warn!(%err, action, "tenant settings change not audited");
    }
}

/// The largest body the admin API reads.
const MAX_BODY: usize = 64 * 1024;

/// Audits a plugin operation of the admin API, whatever its outcome (the detail says which). Plugins are
/// node-wide, so deploys, reloads and rollbacks are recorded in the default tenant's log; a tenant's own plugin
/// settings in that tenant's.
async fn audit_plugin<T: Serialize>(
    shared: &Shared,
    tenant: TenantId,
    action: &str,
    name: &str,
    result: &Result<T, String>,
) {
    let detail = match result {
        Ok(v) => j!({ "ok": true, "result": serde_json::to_value(v).unwrap_or_default() }),
        Err(e) => j!({ "ok": false, "error": e }),
    };
    let event =
        AuditEvent::new(new_event_id(), tenant, action, ("admin", None), ("plugin", name.to_owned()), now_millis())
            .with_detail(detail);
    if let Err(err) = shared.service.audit(tenant, event).await {
        tracing::warn!(%err, action, "plugin operation not audited");
    }
}

/// Reads a small JSON object body; an empty body is `{}`.
async fn read_object(req: Request<Incoming>) -> Result<Value, Response<Body>> {
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(error(Reason::BodyTooLarge, format!("bodies are at most {MAX_BODY} bytes"))),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(j!({}));
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(error(Reason::BadJson, "the body must be a JSON object")),
    }
}

/// The admin API of a node without plugins: the plugin endpoints answer that there are none.
#[derive(Debug, Default)]
pub struct NoPlugins;

#[async_trait::async_trait]
impl Admin for NoPlugins {
    async fn plugins(&self) -> a::PluginList {
        a::PluginList { dir: String::new(), plugins: Vec::new(), rollouts: Vec::new(), nodes: Vec::new() }
    }
    async fn rescan(&self) -> a::LoadReport {
        a::LoadReport { loaded: Vec::new(), refused: Vec::new() }
    }
    async fn reload(&self, _name: &str) -> Result<a::LoadReport, String> {
        Err("no plugins on this node".into())
    }
    async fn rollback(&self, _name: &str) -> Result<a::RolledBack, String> {
        Err("no plugins on this node".into())
    }
    fn tenant_plugin(&self, _tenant: u64, _name: &str) -> Result<a::TenantPlugin, String> {
        Err("no plugins on this node".into())
    }
    async fn set_tenant_plugin(&self, _tenant: u64, _name: &str, _change: &Value) -> Result<a::TenantPlugin, String> {
        Err("no plugins on this node".into())
    }
}

fn refused_or<T: Serialize>(result: Result<T, AdminRefusal>) -> Response<Body> {
    match result {
        Ok(v) => typed(v),
        Err(r) => error(r.reason, r.message),
    }
}

fn outcome<T: Serialize>(result: Result<T, String>) -> Response<Body> {
    match result {
        Ok(v) => typed(v),
        Err(message) => error(Reason::PluginActionFailed, message),
    }
}

/// A typed body as a 200 answer.
fn typed<T: Serialize>(body: T) -> Response<Body> {
    reply(StatusCode::OK, serde_json::to_value(body).unwrap_or_default())
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
