//! The admin API's identity endpoints for app backends: create an account (`POST …/users`), find one by login or
//! external id (`GET …/users?login=` / `?external_id=`) or by id (`GET …/users/{user}`), mint a login token for it
//! (`POST …/users/{user}/tokens`) and revoke every token it has (`DELETE …/users/{user}/tokens`).

use crate::admin::reply;
use crate::http::{Body, error, query_value, service_error};
use http::{Response, StatusCode};
use palaver_api::Reason;
use palaver_api::bodies::admin::{NewUser, TokenRequest};
use palaver_core::{TenantId, UserId};
use palaver_service::{Service, UserKey};
use serde::Serialize;
use serde_json::Value;

/// What an identity endpoint asks.
pub(crate) enum Ask<'a> {
    Create(&'a Value),
    Find(Option<&'a str>),
    Get(&'a str),
    Mint(&'a str, &'a Value),
    Revoke(&'a str),
}

/// Runs one identity endpoint for `tenant` (the path's text).
pub(crate) async fn handle(svc: &Service, tenant: &str, ask: Ask<'_>) -> Response<Body> {
    let Some(tenant) = tenant.parse::<u64>().ok().map(TenantId) else {
        return error(Reason::BadTenant, "tenant must be a number");
    };
    let bad_user = || error(Reason::BadUserId, "user must be a usr… id");
    match ask {
        Ask::Create(body) => match serde_json::from_value::<NewUser>(body.clone()) {
            Ok(req) => answer(svc.create_backend_user(tenant, &req).await),
            Err(e) => error(Reason::BadArgument, e.to_string()),
        },
        Ask::Find(query) => {
            let login = query_value(query, "login");
            let external = query_value(query, "external_id");
            let key = match (&login, &external) {
                (Some(login), None) => UserKey::Login(login),
                (None, Some(external)) => UserKey::External(external.trim()),
                _ => return error(Reason::ArgumentRequired, "give one of `login` and `external_id`"),
            };
            answer(svc.backend_user(tenant, key).await)
        }
        Ask::Get(text) => match UserId::parse(text) {
            Ok(id) => answer(svc.backend_user(tenant, UserKey::Id(id)).await),
            Err(_) => bad_user(),
        },
        Ask::Mint(text, body) => {
            let Ok(id) = UserId::parse(text) else { return bad_user() };
            match serde_json::from_value::<TokenRequest>(body.clone()) {
                Ok(req) => answer(svc.mint_backend_token(tenant, id, req.ttl_seconds).await),
                Err(e) => error(Reason::BadArgument, e.to_string()),
            }
        }
        Ask::Revoke(text) => match UserId::parse(text) {
            Ok(id) => answer(svc.revoke_backend_tokens(tenant, id).await),
            Err(_) => bad_user(),
        },
    }
}

fn answer<T: Serialize>(result: Result<T, palaver_service::ServiceError>) -> Response<Body> {
    match result {
        Ok(body) => reply(StatusCode::OK, serde_json::to_value(body).unwrap_or_default()),
        Err(e) => service_error(&e),
    }
}
