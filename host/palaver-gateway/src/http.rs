//! Request routing and the small HTTP helpers shared by the transports.

use crate::Shared;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use palaver_core::TenantId;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub(crate) type Body = Full<Bytes>;

/// Routes one request.
pub(crate) async fn route(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    remote: SocketAddr,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let resp = match (req.method(), path.as_str()) {
        (&Method::GET, "/livez") => text(StatusCode::OK, "ok"),
        (&Method::GET, "/readyz") => {
            if shared.ready.load(Ordering::Relaxed) && !shared.service.is_draining() {
                text(StatusCode::OK, "ready")
            } else {
                text(StatusCode::SERVICE_UNAVAILABLE, "draining")
            }
        }
        (&Method::GET, "/metrics") => {
            let mut resp = text(StatusCode::OK, "");
            *resp.body_mut() = Full::new(Bytes::from(shared.service.render_metrics()));
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; version=0.0.4"));
            resp
        }
        (_, p) if p.starts_with("/v1/admin/") => crate::admin::handle(&shared, req).await,
        (&Method::GET, "/v1/openapi.json") => crate::im::openapi(),
        (_, p) if p.starts_with("/v1/im/") => crate::im::handle(&shared, req).await,
        (_, "/v0/channels") => crate::ws::upgrade(shared, req, remote).await,
        (_, "/v0/channels/lp") => crate::longpoll::handle(shared, req, remote).await,
        _ => text(StatusCode::NOT_FOUND, "not found"),
    };
    Ok(resp)
}

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// A JSON response with CORS open to any origin, as Tinode's long polling answers.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json; charset=utf-8"));
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, header::HeaderValue::from_static("*"));
    resp
}

/// The `{ctrl}` body of an HTTP-level refusal.
pub(crate) fn ctrl_body(code: palaver_proto::Code, params: Option<serde_json::Value>) -> Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default();
    let mut ctrl = palaver_proto::MsgCtrl::new(None, None, code, palaver_proto::Timestamp(now));
    ctrl.params = params;
    Bytes::from(palaver_proto::encode_server(&palaver_proto::ServerMsg::Ctrl(ctrl)).into_bytes())
}

/// A query parameter, percent-decoded.
pub(crate) fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    let q = req.uri().query()?;
    q.split('&').find_map(|pair| {
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
