//! The HTTP front of the admin commands: `POST /v1/admin/tenants/{tenant}/commands` runs any command type, the
//! user actions (`POST …/users/{uid}/disable|enable|evict`) are shorthands for theirs, and
//! `GET …/commands/{id}` reads a stored result. They build the same command the Admin side sends over the queue
//! and run it through the same code (`Service::execute_admin_command`) synchronously, so the result record, its
//! ledger row and its outbox entry are the same; the HTTP body is the result record.
//!
//! A command id comes from the `Idempotency-Key` header or the body's `command_id`; a retry with the same id
//! gets the stored result and changes nothing. `evict` without a device (all of a user's sessions) is not a
//! command type and stays a direct session control.

use crate::admin::reply;
use crate::http::{Body, error, service_error};
use http::{HeaderMap, Response, StatusCode};
use palaver_api::{ErrorBody, Reason};
use palaver_core::{TenantId, UserId};
use palaver_service::admin::{Actor, AdminCommand, CommandResult, MAX_COMMAND_ID, Outcome};
use palaver_service::{Eviction, Service, ServiceError};
use serde_json::{Value, json};

fn tenant_of(tenant: &str) -> Option<TenantId> {
    tenant.parse::<u64>().ok().map(TenantId)
}

/// A business error as the one HTTP error body.
fn biz_error(e: &palaver_service::BizError) -> Response<Body> {
    error(e.reason, e.message.clone())
}

/// The one error body with the command id beside it, so that a caller that let the server pick one can ask again.
fn command_error(reason: Reason, id: &str, message: String) -> Response<Body> {
    let mut body = serde_json::to_value(ErrorBody::new(reason, message)).unwrap_or_default();
    body["command_id"] = json!(id);
    reply(StatusCode::from_u16(reason.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body)
}

/// The command id the caller gave (header first), or a fresh one.
fn command_id(headers: &HeaderMap, body: &Value) -> Result<String, String> {
    let given = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| body.get("command_id").and_then(Value::as_str).map(str::to_owned));
    match given.map(|g| g.trim().to_owned()) {
        None => Ok(AdminCommand::new_id("http")),
        Some(id) if !id.is_empty() && id.len() <= MAX_COMMAND_ID => Ok(id),
        Some(_) => Err(format!("a command id is 1–{MAX_COMMAND_ID} bytes")),
    }
}

/// Runs one command and answers its result record, with the result's code as the HTTP status.
async fn run(svc: &Service, tenant: TenantId, cmd: AdminCommand) -> Response<Body> {
    let result: CommandResult = match svc.execute_admin_command(tenant, &cmd).await {
        Outcome::Ran(r) | Outcome::Repeat(r) => r,
        Outcome::Retry(why) => {
            return command_error(Reason::Unavailable, &cmd.command_id, format!("try again: {why}"));
        }
        Outcome::Busy(node) => {
            let message = format!("the command is running on node {node}; ask again for its result");
            return command_error(Reason::CommandRunning, &cmd.command_id, message);
        }
    };
    let status = StatusCode::from_u16(result.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    reply(status, serde_json::to_value(&result).unwrap_or_default())
}

fn command(tenant: TenantId, id: String, kind: &str, payload: Value) -> AdminCommand {
    AdminCommand {
        command_id: id,
        tenant_id: Some(tenant.0.to_string()),
        kind: kind.to_owned(),
        actor: Actor { kind: "http-admin".into(), id: "admin-token".into() },
        payload,
        ..AdminCommand::default()
    }
}

/// `POST …/commands`: `{"type", "payload", "command_id"?}`.
pub(crate) async fn handle_command(svc: &Service, tenant: &str, headers: &HeaderMap, body: &Value) -> Response<Body> {
    let Some(tenant) = tenant_of(tenant) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    let id = match command_id(headers, body) {
        Ok(id) => id,
        Err(why) => return error(Reason::BadCommandId, why),
    };
    let Some(kind) = body.get("type").and_then(Value::as_str) else {
        return error(Reason::ArgumentRequired, "`type` is required");
    };
    if !palaver_service::admin::COMMAND_TYPES.contains(&kind) {
        return error(Reason::UnknownType, format!("unknown command type {kind}"));
    }
    let payload = body.get("payload").cloned().unwrap_or_else(|| json!({}));
    if !payload.is_object() {
        return error(Reason::BadArgument, "`payload` must be an object");
    }
    run(svc, tenant, command(tenant, id, kind, payload)).await
}

/// `GET …/commands/{id}`: the stored result, 404 while there is none.
pub(crate) async fn get_command(svc: &Service, tenant: &str, id: &str) -> Response<Body> {
    let Some(tenant) = tenant_of(tenant) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    match svc.admin_command_result(tenant, id).await {
        Ok(Some(result)) => reply(StatusCode::OK, result),
        Ok(None) => error(Reason::CommandNotFound, "no finished command with this id"),
        Err(e) => biz_error(&e),
    }
}

/// `POST …/users/{uid}/{action}`. `body` is the request's JSON object (`{}` when empty).
pub(crate) async fn handle(
    svc: &Service,
    tenant: &str,
    user: &str,
    action: &str,
    headers: &HeaderMap,
    body: &Value,
) -> Response<Body> {
    let Some(tenant) = tenant_of(tenant) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    let Ok(user) = UserId::parse(user) else {
        return error(Reason::BadUserId, "user must be a usr… id");
    };
    let device = match body.get("device") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if !d.is_empty() && d.len() <= 128 => Some(d.clone()),
        Some(_) => {
            return error(Reason::BadDevice, "device must be a string of 1–128 bytes");
        }
    };
    let reason: Option<String> = body.get("reason").and_then(Value::as_str).map(|r| r.chars().take(200).collect());
    let kind = match (action, &device) {
        ("disable", _) => "user.disable",
        ("enable", _) => "user.enable",
        ("evict", Some(_)) if !body.get("revoke_tokens").and_then(Value::as_bool).unwrap_or(false) => {
            "user.device.revoke"
        }
        ("evict", _) => return evict_all(svc, tenant, user, device, body, reason).await,
        _ => return error(Reason::NoRoute, "no such user action (evict, disable, enable)"),
    };
    let id = match command_id(headers, body) {
        Ok(id) => id,
        Err(why) => return error(Reason::BadCommandId, why),
    };
    let payload = json!({ "user": user.to_string(), "device": device, "reason": reason });
    run(svc, tenant, command(tenant, id, kind, payload)).await
}

/// An eviction that no command type covers (every session, or revoking tokens too): a direct session control.
async fn evict_all(
    svc: &Service,
    tenant: TenantId,
    user: UserId,
    device: Option<String>,
    body: &Value,
    reason: Option<String>,
) -> Response<Body> {
    let ev = Eviction {
        device,
        revoke_tokens: body.get("revoke_tokens").and_then(Value::as_bool).unwrap_or(false),
        reason: reason.unwrap_or_else(|| "evicted".into()),
    };
    match svc.evict(tenant, user, ev).await {
        Ok(closed) => {
            let body = palaver_api::bodies::admin::Evicted { code: 200, closed_here: closed as u64 };
            reply(StatusCode::OK, serde_json::to_value(body).unwrap_or_default())
        }
        // A missing account is USER_NOT_FOUND, whichever way the service words it.
        Err(ServiceError::NotFound) => error(Reason::UserNotFound, "no such user"),
        Err(e) => service_error(&e),
    }
}

/// `GET …/reports?open=true&cursor=&limit=`: the tenant's abuse reports, newest first.
pub(crate) async fn list_reports(svc: &Service, tenant: &str, query: Option<&str>) -> Response<Body> {
    let Some(tenant) = tenant_of(tenant) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    let mut open_only = false;
    let mut cursor = None;
    let mut limit = 20usize;
    for pair in query.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "open" => open_only = v == "true" || v == "1",
            "cursor" => match v.parse::<i64>() {
                Ok(c) if c > 0 => cursor = Some(c),
                _ => return error(Reason::BadCursor, "cursor must be a positive integer"),
            },
            "limit" => match v.parse::<usize>() {
                Ok(l) if (1..=100).contains(&l) => limit = l,
                _ => return error(Reason::BadLimit, "limit must be 1–100"),
            },
            _ => {}
        }
    }
    match svc.list_reports(tenant, open_only, cursor, limit).await {
        Ok(page) => reply(StatusCode::OK, page),
        Err(e) => biz_error(&e),
    }
}
