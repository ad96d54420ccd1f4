//! The business HTTP API under `/v1/im/` and its OpenAPI document at `/v1/openapi.json`.
//!
//! Every endpoint runs one business command (friends, group governance, notifications) that a plugin handles;
//! the gateway only authenticates the caller (the tenant's API key and a login token, exactly as the socket
//! does), turns path, query and body into the command's JSON arguments, and maps the outcome to HTTP. Errors
//! are always `{code, message, reason}` with a stable upper-case `reason`.

mod openapi;
pub(crate) mod routes;

use crate::Shared;
use crate::http::{Body, json, tenant_of};
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use palaver_core::{TenantId, UserId};
use serde_json::{Map, Value, json as j};

/// The largest request body the API reads.
const MAX_BODY: usize = 64 * 1024;

/// One business command as the API hands it to whoever runs commands (the plugin platform).
#[derive(Debug, Clone)]
pub struct ImCall {
    pub tenant: TenantId,
    pub actor: UserId,
    pub command: &'static str,
    /// Path parameters, query parameters and the body's fields, as one JSON object.
    pub args: Value,
}

/// What a command gave.
#[derive(Debug, Clone, PartialEq)]
pub enum ImOutcome {
    Ok(Value),
    /// Refused with an HTTP status (the Tinode ctrl code, 400–599), a stable reason and a message.
    Refused {
        status: u16,
        reason: String,
        message: String,
    },
    /// Nothing on this node handles the command.
    NotAvailable,
}

/// Runs business commands.
#[async_trait::async_trait]
pub trait ImCommands: Send + Sync {
    async fn run(&self, call: ImCall) -> ImOutcome;
}

/// An error response in the API's one shape.
pub(crate) fn error(status: StatusCode, reason: &str, message: impl Into<String>) -> Response<Body> {
    let body = j!({ "code": status.as_u16(), "message": message.into(), "reason": reason });
    json(status, Bytes::from(body.to_string()))
}

/// Serves the OpenAPI document.
pub(crate) fn openapi() -> Response<Body> {
    json(StatusCode::OK, Bytes::from(openapi::document().to_string()))
}

/// Handles one request under `/v1/im/`.
pub(crate) async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_start_matches("/v1/im").to_owned();
    let Some((route, params)) = routes::find(req.method().as_str(), &path) else {
        return if routes::path_exists(&path) {
            error(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", "this path takes another method")
        } else {
            error(StatusCode::NOT_FOUND, "NO_ROUTE", format!("no endpoint {path}; see /v1/openapi.json"))
        };
    };
    let Some(tenant) = tenant_of(shared, &req).await else {
        return error(StatusCode::FORBIDDEN, "API_KEY_REQUIRED", "a valid API key is required (X-Tinode-APIKey)");
    };
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Token "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return error(StatusCode::UNAUTHORIZED, "TOKEN_REQUIRED", "send the login token as `Authorization: Token …`");
    };
    let actor = match shared.service.authenticate_token(tenant, &token).await {
        Ok(user) => user,
        Err(palaver_service::ServiceError::Unavailable { .. }) => {
            return error(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "try again shortly");
        }
        Err(_) => return error(StatusCode::UNAUTHORIZED, "TOKEN_INVALID", "the token is invalid, expired or revoked"),
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
    if route.body {
        match read_body(req).await {
            Ok(body) => args.extend(body),
            Err(resp) => return resp,
        }
    }
    // Path parameters name what the call is about; a body cannot override them.
    for (k, v) in params {
        args.insert(k.to_owned(), Value::String(v));
    }
    let Some(commands) = shared.commands.as_ref() else {
        return error(
            StatusCode::NOT_FOUND,
            "COMMAND_NOT_AVAILABLE",
            format!("no plugin on this node runs {}", route.command),
        );
    };
    match commands.run(ImCall { tenant, actor, command: route.command, args: Value::Object(args) }).await {
        ImOutcome::Ok(v) => json(StatusCode::OK, Bytes::from(v.to_string())),
        ImOutcome::Refused { status, reason, message } => {
            let status = StatusCode::from_u16(status)
                .ok()
                .filter(|s| s.is_client_error() || s.is_server_error())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error(status, &reason, message)
        }
        ImOutcome::NotAvailable => error(
            StatusCode::NOT_FOUND,
            "COMMAND_NOT_AVAILABLE",
            format!("no plugin on this node runs {}", route.command),
        ),
    }
}

/// The body as a JSON object; an empty body is an empty object.
async fn read_body(req: Request<Incoming>) -> Result<Map<String, Value>, Response<Body>> {
    let bytes = match http_body_util::Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "BODY_TOO_LARGE",
                format!("bodies are at most {MAX_BODY} bytes"),
            ));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(error(StatusCode::BAD_REQUEST, "BAD_JSON", "the body must be a JSON object")),
    }
}
