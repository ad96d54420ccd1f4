//! Review of held messages (`POST /v1/admin/tenants/{tenant}/topics/{topic}/messages/{seq}/audit` with
//! `{"action":"release"|"reject"}`): a message a publish hook held is delivered when released, or stays
//! visible to its sender only when rejected. `topic` is the stored name (`grp…`, `p2p…`).

use crate::admin::reply;
use crate::http::{Body, error, service_error};
use http::{Response, StatusCode};
use palaver_api::Reason;
use palaver_core::{AuditStatus, TenantId};
use palaver_service::{Service, ServiceError};
use serde_json::Value;

/// Runs one review. `body` is the request's JSON object (`{}` when empty).
pub(crate) async fn handle(svc: &Service, tenant: &str, topic: &str, seq: &str, body: &Value) -> Response<Body> {
    let Ok(tenant) = tenant.parse::<u64>().map(TenantId) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    let Ok(seq) = seq.parse::<i64>() else { return error(Reason::BadSeq, "seq must be a number") };
    let audit = match body.get("action").and_then(Value::as_str) {
        Some("release") => AuditStatus::Pass,
        Some("reject") => AuditStatus::Reject,
        _ => return error(Reason::BadAction, "action must be \"release\" or \"reject\""),
    };
    match svc.set_message_audit(tenant, topic, seq, audit).await {
        Ok(()) => {
            let body = palaver_api::bodies::admin::AuditDone { code: 200, audit: audit.as_str().to_owned() };
            reply(StatusCode::OK, serde_json::to_value(body).unwrap_or_default())
        }
        Err(ServiceError::TopicNotFound) => error(Reason::TopicNotFound, "no such topic"),
        Err(ServiceError::NotFound) => error(Reason::MessageNotFound, "no such message"),
        Err(ServiceError::NotAllowed) => error(Reason::MessageNotHeld, "the message is not held"),
        Err(e) => service_error(&e),
    }
}
