//! Tinode's long-polling transport. The first request (no `sid`) creates a session and answers HTTP 201 with
//! its sid; a request with a body hands one client message to the session and answers empty; a request
//! without a body waits for one server message, or answers empty after the poll timeout.

use crate::Shared;
use crate::http::{Body, bad_key, ctrl_body, json, query_param, tenant_of};
use crate::limits::RateLimiter;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use palaver_core::TenantId;
use palaver_proto::Code;
use palaver_service::{Outbound, ServiceError, Session, Transport};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One long-polling session.
struct LpSession {
    tenant: TenantId,
    session: tokio::sync::Mutex<Option<Session>>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Outbound>>,
    limiter: Mutex<RateLimiter>,
    /// Milliseconds since `epoch` of the last request, for the idle sweep.
    last: AtomicI64,
}

/// The long-polling sessions of this node, by sid.
pub(crate) struct LpSessions {
    map: Mutex<HashMap<String, Arc<LpSession>>>,
    epoch: Instant,
}

impl Default for LpSessions {
    fn default() -> Self {
        LpSessions { map: Mutex::new(HashMap::new()), epoch: Instant::now() }
    }
}

impl LpSessions {
    fn now(&self) -> i64 {
        self.epoch.elapsed().as_millis() as i64
    }

    fn get(&self, sid: &str) -> Option<Arc<LpSession>> {
        let s = self.map.lock().get(sid).cloned()?;
        s.last.store(self.now(), Ordering::Relaxed);
        Some(s)
    }

    fn remove(&self, sid: &str) -> Option<Arc<LpSession>> {
        self.map.lock().remove(sid)
    }
}

/// Handles one long-polling request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>, remote: SocketAddr) -> Response<Body> {
    if req.method() == Method::OPTIONS {
        return preflight();
    }
    if req.method() != Method::GET && req.method() != Method::POST {
        return json(StatusCode::METHOD_NOT_ALLOWED, ctrl_body(Code::OperationNotAllowed, None));
    }
    let Some(tenant) = tenant_of(&shared, &req).await else { return bad_key() };
    let Some(sid) = query_param(&req, "sid").filter(|s| !s.is_empty()) else {
        if shared.service.is_draining() {
            return json(StatusCode::SERVICE_UNAVAILABLE, ctrl_body(Code::ServiceUnavailable, None));
        }
        return create(&shared, tenant, remote);
    };
    let Some(lp) = shared.lp.get(&sid).filter(|s| s.tenant == tenant) else {
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    };
    let limit = shared.cfg.hard_frame_limit();
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return json(StatusCode::PAYLOAD_TOO_LARGE, ctrl_body(Code::TooLarge, None)),
    };
    let resp = if body.iter().all(u8::is_ascii_whitespace) {
        poll(&shared, &sid, &lp).await
    } else {
        publish(&shared, &lp, &body).await
    };
    lp.last.store(shared.lp.now(), Ordering::Relaxed);
    resp
}

fn create(shared: &Arc<Shared>, tenant: TenantId, remote: SocketAddr) -> Response<Body> {
    let (session, rx) = shared.service.open_session(tenant, Transport::LongPoll, Some(remote.to_string()));
    let sid = session.sid();
    let cfg = &shared.cfg;
    let lp = Arc::new(LpSession {
        tenant,
        session: tokio::sync::Mutex::new(Some(session)),
        rx: tokio::sync::Mutex::new(rx),
        limiter: Mutex::new(RateLimiter::new(cfg.rate_per_second, cfg.rate_burst)),
        last: AtomicI64::new(shared.lp.now()),
    });
    shared.lp.map.lock().insert(sid.clone(), lp);
    json(StatusCode::CREATED, ctrl_body(Code::Created, Some(json!({ "sid": sid }))))
}

async fn publish(shared: &Shared, lp: &LpSession, body: &Bytes) -> Response<Body> {
    let max = shared.cfg.max_message_size;
    let allowed = lp.limiter.lock().allow();
    let mut guard = lp.session.lock().await;
    let Some(session) = guard.as_mut() else {
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    };
    if body.len() > max {
        session.refuse_frame(body, ServiceError::TooLarge(format!("the limit is {max} bytes"))).await;
    } else if !allowed {
        session.refuse_frame(body, ServiceError::TooManyRequests).await;
    } else {
        session.handle_frame(body).await;
    }
    json(StatusCode::OK, Bytes::new())
}

async fn poll(shared: &Shared, sid: &str, lp: &LpSession) -> Response<Body> {
    let mut rx = lp.rx.lock().await;
    let next = tokio::time::timeout(shared.cfg.lp_poll_timeout, rx.recv()).await;
    match next {
        Err(_) => json(StatusCode::OK, Bytes::new()),
        Ok(Some(Outbound::Frame(frame))) => json(StatusCode::OK, frame),
        Ok(Some(Outbound::Close)) | Ok(None) => {
            drop(rx);
            close(shared, sid).await;
            json(StatusCode::OK, Bytes::new())
        }
    }
}

async fn close(shared: &Shared, sid: &str) {
    let Some(lp) = shared.lp.remove(sid) else { return };
    let session = lp.session.lock().await.take();
    if let Some(session) = session {
        session.close().await;
    }
}

/// Closes long-polling sessions that stopped polling.
pub(crate) async fn sweep(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        let cutoff = shared.lp.now() - shared.cfg.lp_session_timeout.as_millis() as i64;
        let stale: Vec<String> = shared
            .lp
            .map
            .lock()
            .iter()
            .filter(|(_, s)| s.last.load(Ordering::Relaxed) < cutoff)
            .map(|(k, _)| k.clone())
            .collect();
        for sid in stale {
            close(&shared, &sid).await;
        }
    }
}

fn preflight() -> Response<Body> {
    let mut resp = Response::new(Full::default());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    let h = resp.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, header::HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, header::HeaderValue::from_static("GET, POST, OPTIONS"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        header::HeaderValue::from_static("Content-Type, X-Tinode-APIKey, X-Tinode-Auth"),
    );
    h.insert(header::ACCESS_CONTROL_MAX_AGE, header::HeaderValue::from_static("86400"));
    resp
}
