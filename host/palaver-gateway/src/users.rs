//! Admin actions on user accounts (`POST /v1/admin/tenants/{tenant}/users/{uid}/{action}`): evict the user's
//! sessions on every node (all of them, or one device's), and disable or re-enable the account.
//!
//! These are what an operator reaches for when an account is compromised: `evict` with `revoke_tokens`
//! logs the user out everywhere for good, `disable` also refuses new logins.

use crate::admin::reply;
use crate::http::Body;
use http::{Response, StatusCode};
use palaver_core::{TenantId, UserId};
use palaver_service::{Eviction, Service, ServiceError};
use serde_json::{Value, json};

/// Runs one user action. `body` is the request's JSON object (`{}` when empty).
pub(crate) async fn handle(svc: &Service, tenant: &str, user: &str, action: &str, body: &Value) -> Response<Body> {
    let Ok(tenant) = tenant.parse::<u64>().map(TenantId) else {
        return reply(StatusCode::BAD_REQUEST, json!({ "code": 400, "message": "tenant must be a number" }));
    };
    let Ok(user) = UserId::parse(user) else {
        return reply(StatusCode::BAD_REQUEST, json!({ "code": 400, "message": "user must be a usr… id" }));
    };
    let result = match action {
        "evict" => {
            let device = match body.get("device") {
                None | Some(Value::Null) => None,
                Some(Value::String(d)) if !d.is_empty() && d.len() <= 128 => Some(d.clone()),
                Some(_) => {
                    return reply(
                        StatusCode::BAD_REQUEST,
                        json!({ "code": 400, "message": "device must be a string of 1–128 bytes" }),
                    );
                }
            };
            let ev = Eviction {
                device,
                revoke_tokens: body.get("revoke_tokens").and_then(Value::as_bool).unwrap_or(false),
                reason: body.get("reason").and_then(Value::as_str).unwrap_or("evicted").chars().take(200).collect(),
            };
            svc.evict(tenant, user, ev).await
        }
        "disable" => svc.set_account_state(tenant, user, false).await,
        "enable" => svc.set_account_state(tenant, user, true).await,
        _ => return reply(StatusCode::NOT_FOUND, json!({ "code": 404, "message": "no such user action" })),
    };
    match result {
        Ok(closed) => reply(StatusCode::OK, json!({ "code": 200, "closed_here": closed })),
        Err(e) => {
            let status = match &e {
                ServiceError::NotFound | ServiceError::UserNotFound => StatusCode::NOT_FOUND,
                _ => StatusCode::from_u16(e.code().code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            };
            reply(status, json!({ "code": status.as_u16(), "message": e.text() }))
        }
    }
}
