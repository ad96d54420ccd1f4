//! Request routing and the small HTTP helpers shared by the transports.

use crate::Shared;
use crate::listener::Routes;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use palaver_core::TenantId;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

/// A response body: a whole one ([`full`]) for every answer but a file download, which streams.
pub(crate) type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

/// A body of these bytes.
pub(crate) fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed_unsync()
}

/// An empty response with this status.
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// Routes one request that came in on a listener serving `routes`.
pub(crate) async fn route(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    remote: SocketAddr,
    routes: Routes,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let label = route_label(&method, &path);
    // The caller's `X-Request-Id` when it is a plain token, else a fresh one; every log line of the request
    // carries it (and the access line too).
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        })
        .map_or_else(|| format!("{:016x}", rand::random::<u64>()), str::to_owned);
    let span = tracing::info_span!("http", request_id = %request_id);
    let resp = tracing::Instrument::instrument(route_inner(&shared, req, remote, routes, &path), span.clone()).await;
    if let Some(label) = label {
        shared.service.metrics().http_request(label, started.elapsed());
    }
    if shared.cfg.access_log {
        let _in = span.enter();
        // The path only: the query may carry an API key or an auth token.
        tracing::info!(target: "palaver::access", %method, path = %path, status = resp.status().as_u16(),
            micros = started.elapsed().as_micros() as u64, client = %remote, "http request");
    }
    Ok(resp)
}

async fn route_inner(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    remote: SocketAddr,
    routes: Routes,
    path: &str,
) -> Response<Body> {
    let shared = shared.clone();
    if routes == Routes::Metrics {
        return match (req.method(), path) {
            (&Method::GET, "/metrics") => metrics(&shared, &req).await,
            _ => text(StatusCode::NOT_FOUND, "not found"),
        };
    }
    match (req.method(), path) {
        (&Method::GET, "/livez") => text(StatusCode::OK, "ok"),
        (&Method::GET, "/readyz") => crate::ready::handle(&shared).await,
        (&Method::GET, "/metrics") if !shared.cfg.metrics_listener => metrics(&shared, &req).await,
        (_, p) if p.starts_with("/v1/admin/") => crate::admin::handle(&shared, req).await,
        (&Method::GET, "/v1/openapi.json") => crate::im::openapi(&shared),
        (_, p) if p.starts_with("/v1/im/") => crate::im::handle(&shared, req).await,
        (_, "/v0/channels") => crate::ws::upgrade(shared, req, remote).await,
        (_, "/v0/channels/lp") => crate::longpoll::handle(shared, req, remote).await,
        (_, p) if p.starts_with("/v0/file/") => crate::files::handle(&shared, req).await,
        _ => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The route an HTTP API request is timed under in `palaver_http_request_duration_seconds`: a path pattern
/// (ids left out, so the series stay bounded), `None` for the long-lived WebSocket and long-poll channels.
fn route_label(method: &Method, path: &str) -> Option<&'static str> {
    Some(match path {
        "/livez" => "/livez",
        "/readyz" => "/readyz",
        "/metrics" => "/metrics",
        "/v1/openapi.json" => "/v1/openapi.json",
        p if p.starts_with("/v0/channels") => return None,
        "/v0/file/u" | "/v0/file/u/" => "/v0/file/u/",
        p if p.starts_with("/v0/file/s/") => "/v0/file/s/{file}",
        p if p.starts_with("/v1/im/") => {
            crate::im::route_path(method.as_str(), p.trim_start_matches("/v1/im")).unwrap_or("/v1/im/(unknown)")
        }
        p if p.starts_with("/v1/admin/") => crate::admin::route_path(p),
        _ => "(unknown)",
    })
}

/// The Prometheus metrics; with `protect_metrics`, only for the admin token (refused if the node has none).
/// The readiness checks run first (their report is reused for a second), so `palaver_dependency_up` is
/// current in every scrape.
async fn metrics(shared: &Shared, req: &Request<Incoming>) -> Response<Body> {
    if shared.cfg.protect_metrics {
        let allowed =
            shared.admin.as_ref().is_some_and(|(_, token)| crate::admin::bearer_matches(req.headers(), token));
        if !allowed {
            let mut resp = text(StatusCode::UNAUTHORIZED, "admin token required");
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    crate::ready::export(shared).await;
    let mut resp = text(StatusCode::OK, "");
    *resp.body_mut() = full(Bytes::from(shared.service.render_metrics()));
    let content_type = header::HeaderValue::from_static(palaver_service::METRICS_CONTENT_TYPE);
    resp.headers_mut().insert(header::CONTENT_TYPE, content_type);
    resp
}

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut resp = Response::new(full(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// A JSON response with CORS open to any origin, as Tinode's long polling answers.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json; charset=utf-8"));
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, header::HeaderValue::from_static("*"));
    resp
}

/// An HTTP refusal in the one error shape of both APIs (`palaver_api::ErrorBody`): the status is the reason's.
pub(crate) fn error(reason: palaver_api::Reason, message: impl Into<String>) -> Response<Body> {
    let body = palaver_api::ErrorBody::new(reason, message);
    let status = StatusCode::from_u16(body.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let bytes = serde_json::to_vec(&body).map(Bytes::from).unwrap_or_default();
    let mut resp = json(status, bytes);
    if reason == palaver_api::Reason::RateLimited || reason == palaver_api::Reason::Unavailable {
        // Without a hint of its own, a throttled or unavailable caller retries after a second.
        resp.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    resp
}

/// A service error as an HTTP refusal: its own reason and text, and its retry hint as `Retry-After`.
pub(crate) fn service_error(e: &palaver_service::ServiceError) -> Response<Body> {
    use palaver_service::ServiceError as E;
    let mut resp = error(e.reason(), e.text());
    if let E::Unavailable { retry_after_ms, .. }
    | E::RateLimited { retry_after_ms, .. }
    | E::LoginThrottled { retry_after_ms } = e
    {
        resp.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after_ms.div_ceil(1000).max(1)));
    }
    resp
}

/// The `{ctrl}` body of an HTTP-level refusal.
pub(crate) fn ctrl_body(code: palaver_proto::Code, params: Option<serde_json::Value>) -> Bytes {
    palaver_service::ctrl_frame(None, None, code, None, palaver_core::now_millis(), params)
}

/// The `{ctrl}` body of an HTTP-level refusal with a text that says more than the code's own words.
pub(crate) fn ctrl_text(code: palaver_proto::Code, text: &str) -> Bytes {
    palaver_service::ctrl_frame(None, None, code, Some(text), palaver_core::now_millis(), None)
}

/// A query parameter, percent-decoded.
pub(crate) fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    query_value(req.uri().query(), name)
}

/// A parameter of a query string, percent-decoded.
pub(crate) fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Resolves the tenant from the API key in the `X-Tinode-APIKey` header or the `apikey` parameter.
pub(crate) async fn tenant_of(shared: &Shared, req: &Request<Incoming>) -> Option<TenantId> {
    let key = req
        .headers()
        .get("x-tinode-apikey")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query_param(req, "apikey"));
    shared.tenants.resolve(key.as_deref()?).await
}

/// The answer to a missing or invalid API key: HTTP 403 and no session.
pub(crate) fn bad_key() -> Response<Body> {
    json(StatusCode::FORBIDDEN, ctrl_body(palaver_proto::Code::ApiKeyRequired, None))
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_decoding() {
        assert_eq!(super::percent_decode("a%2Bb%3D%3d+c"), "a+b== c");
        assert_eq!(super::percent_decode("bad%zz%"), "bad%zz%");
    }
}
