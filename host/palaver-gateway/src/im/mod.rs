//! The business HTTP API under `/v1/im/` and its OpenAPI document at `/v1/openapi.json`.
//!
//! Every endpoint runs one business command (friends, group governance, notifications) that a plugin handles;
//! the gateway only authenticates the caller (the tenant's API key and a login token, exactly as the socket
//! does), turns path, query and body into the command's JSON arguments, and maps the outcome to HTTP. Errors
//! are always the one error body of both HTTP APIs, `{code, reason, message}`, with a reason of the table.

mod openapi;
pub(crate) mod routes;

use crate::Shared;
use crate::http::{Body, error, json, service_error, tenant_of};
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use palaver_api::{CommandName, Reason};
use palaver_core::{TenantId, UserId};
use serde_json::{Map, Value};

/// The largest request body the API reads.
const MAX_BODY: usize = 64 * 1024;

/// One business command as the API hands it to whoever runs commands (the plugin platform).
#[derive(Debug, Clone)]
pub struct ImCall {
    pub tenant: TenantId,
    pub actor: UserId,
    pub command: CommandName,
    /// Path parameters, query parameters and the body's fields, as one JSON object.
    pub args: Value,
}

/// What a command gave.
#[derive(Debug, Clone, PartialEq)]
pub enum ImOutcome {
    Ok(Value),
    /// Refused with a stable reason (which fixes the HTTP status) and a message.
    Refused {
        reason: Reason,
        message: String,
    },
    /// Nothing on this node handles the command.
    NotAvailable,
}

/// Runs business commands.
#[async_trait::async_trait]
pub trait ImCommands: Send + Sync {
    async fn run(&self, call: ImCall) -> ImOutcome;

    /// Runs a plugin's client command; `NotAvailable` if no plugin offers it.
    async fn run_plugin(&self, _call: PluginCall) -> ImOutcome {
        ImOutcome::NotAvailable
    }

    /// The commands the node's plugins offer to clients, for the OpenAPI document.
    fn plugin_commands(&self) -> Vec<palaver_core::ports::ClientCommandDoc> {
        Vec::new()
    }
}

/// Serves the OpenAPI document: the route tables' part is built once (it depends only on them and the body
/// types); the plugins' client commands are added per request, since plugins come and go.
pub(crate) fn openapi(shared: &Shared) -> Response<Body> {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let base = DOC.get_or_init(openapi::document);
    let commands = shared.commands.as_ref().map(|c| c.plugin_commands()).unwrap_or_default();
    if commands.is_empty() {
        return json(StatusCode::OK, Bytes::from(base.to_string()));
    }
    let mut doc = base.clone();
    openapi::add_plugin_commands(&mut doc, &commands);
    json(StatusCode::OK, Bytes::from(doc.to_string()))
}

/// A plugin's own command, called by a client: `POST /v1/im/plugins/{plugin}/commands/{command}`.
#[derive(Debug, Clone)]
pub struct PluginCall {
    pub tenant: TenantId,
    pub actor: UserId,
    pub plugin: String,
    pub command: String,
    /// The request body, a JSON object (empty if there was none).
    pub args: Value,
}

/// The route of plugins' client commands, below `/v1/im`, as metrics and the OpenAPI document name it.
pub(crate) const PLUGIN_ROUTE: &str = "/plugins/{plugin}/commands/{command}";

/// `(plugin, command)` if `path` (below `/v1/im`) is a plugin command's path.
fn plugin_path(path: &str) -> Option<(&str, &str)> {
    let (plugin, command) = path.strip_prefix("/plugins/")?.split_once("/commands/")?;
    let segment = |s: &str| !s.is_empty() && !s.contains('/');
    (segment(plugin) && segment(command)).then_some((plugin, command))
}

/// The route pattern (below `/v1/im`, `{name}` for parameters) that `method` and `path` select, for metrics.
pub(crate) fn route_path(method: &str, path: &str) -> Option<&'static str> {
    if plugin_path(path).is_some() {
        return Some(PLUGIN_ROUTE);
    }
    routes::find(method, path).map(|(route, _)| route.path)
}

/// Handles one request under `/v1/im/`.
pub(crate) async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_start_matches("/v1/im").to_owned();
    if let Some((plugin, command)) = plugin_path(&path) {
        if req.method() != http::Method::POST {
            return error(Reason::MethodNotAllowed, "a plugin's command takes POST");
        }
        let (plugin, command) = (plugin.to_owned(), command.to_owned());
        return plugin_command(shared, req, plugin, command).await;
    }
    let Some((route, params)) = routes::find(req.method().as_str(), &path) else {
        return if routes::path_exists(&path) {
            error(Reason::MethodNotAllowed, "this path takes another method")
        } else {
            error(Reason::NoRoute, format!("no endpoint {path}; see /v1/openapi.json"))
        };
    };
    let (tenant, actor) = match caller(shared, &req).await {
        Ok(who) => who,
        Err(resp) => return resp,
    };
    let mut args = Map::new();
    for pair in req.uri().query().unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (k, _) = pair.split_once('=').unwrap_or((pair, ""));
        if route.query.contains(&k)
            && let Some(v) = crate::http::query_param(&req, k)
        {
            // Numbers stay numbers (`limit=20`); everything else is a string.
            args.insert(k.to_owned(), v.parse::<i64>().map(Value::from).unwrap_or(Value::String(v)));
        }
    }
    if let Some(request) = route.request {
        let body = match read_body(req).await {
            Ok(body) => body,
            Err(resp) => return resp,
        };
        // The body must read as the endpoint's type (the one its OpenAPI schema comes from): known fields of
        // the right JSON types. What is required and in range the command checks, with its own reasons.
        if let Err(why) = (request.check)(&body) {
            return error(Reason::BadArgument, format!("the body does not fit {} {}: {why}", route.method, route.path));
        }
        args.extend(body);
    }
    // Path parameters name what the call is about; a body cannot override them.
    for (k, v) in params {
        args.insert(k.to_owned(), Value::String(v));
    }
    let Some(commands) = shared.commands.as_ref() else { return not_available(route.op) };
    match commands.run(ImCall { tenant, actor, command: route.op, args: Value::Object(args) }).await {
        ImOutcome::Ok(v) => json(StatusCode::OK, Bytes::from(v.to_string())),
        ImOutcome::Refused { reason, message } => error(reason, message),
        ImOutcome::NotAvailable => not_available(route.op),
    }
}

/// Runs a plugin's client command: the same caller checks as every `/v1/im` route, the body as the arguments.
async fn plugin_command(shared: &Shared, req: Request<Incoming>, plugin: String, command: String) -> Response<Body> {
    let (tenant, actor) = match caller(shared, &req).await {
        Ok(who) => who,
        Err(resp) => return resp,
    };
    let args = match read_body(req).await {
        Ok(body) => Value::Object(body),
        Err(resp) => return resp,
    };
    let unknown =
        || error(Reason::UnknownCommand, format!("plugin {plugin:?} offers no command {command:?} to clients"));
    let Some(commands) = shared.commands.as_ref() else { return unknown() };
    match commands
        .run_plugin(PluginCall { tenant, actor, plugin: plugin.clone(), command: command.clone(), args })
        .await
    {
        ImOutcome::Ok(v) => json(StatusCode::OK, Bytes::from(v.to_string())),
        ImOutcome::Refused { reason, message } => error(reason, message),
        ImOutcome::NotAvailable => unknown(),
    }
}

/// The tenant (from the API key) and the user (from the login token) of a request, within the user's rate;
/// otherwise the refusal to send.
async fn caller(shared: &Shared, req: &Request<Incoming>) -> Result<(TenantId, UserId), Response<Body>> {
    let Some(tenant) = tenant_of(shared, req).await else {
        return Err(error(Reason::ApiKeyRequired, "a valid API key is required (X-Tinode-APIKey)"));
    };
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Token "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(error(Reason::TokenRequired, "send the login token as `Authorization: Token …`"));
    };
    let actor = match shared.service.authenticate_token(tenant, &token).await {
        Ok(user) => user,
        Err(e @ palaver_service::ServiceError::Unavailable { .. }) => return Err(service_error(&e)),
        Err(_) => return Err(error(Reason::TokenInvalid, "the token is invalid, expired or revoked")),
    };
    // Per user (whom the token names), so that one user's many tokens share one budget.
    if let Err(palaver_service::ServiceError::RateLimited { retry_after_ms, .. }) =
        shared.service.check_api_rate(tenant, actor)
    {
        let mut resp = error(Reason::RateLimited, format!("too many requests; retry in {retry_after_ms} ms"));
        resp.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from(retry_after_ms.div_ceil(1000).max(1)));
        return Err(resp);
    }
    Ok((tenant, actor))
}

fn not_available(command: CommandName) -> Response<Body> {
    error(Reason::CommandNotAvailable, format!("no plugin on this node runs {command}"))
}

/// The body as a JSON object; an empty body is an empty object.
async fn read_body(req: Request<Incoming>) -> Result<Map<String, Value>, Response<Body>> {
    let bytes = match http_body_util::Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Err(error(Reason::BodyTooLarge, format!("bodies are at most {MAX_BODY} bytes")));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(error(Reason::BadJson, "the body must be a JSON object")),
    }
}
