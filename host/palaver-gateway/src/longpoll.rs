//! Tinode's long-polling transport. The first request (no `sid`) creates a session and answers HTTP 201 with
//! its sid; a request with a body hands one client message to the session and answers empty; a request
//! without a body waits for one server message, or answers empty after the poll timeout.

use crate::Shared;
use crate::http::{Body, bad_key, ctrl_body, ctrl_text, json, query_param, tenant_of};
use crate::limits::RateLimiter;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use palaver_core::TenantId;
use palaver_proto::Code;
use palaver_service::{Outbound, Session, Transport};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

/// One long-polling session.
struct LpSession {
    tenant: TenantId,
    /// The client's address, for the per-address cap.
    ip: IpAddr,
    session: tokio::sync::Mutex<Option<Session>>,
    rx: tokio::sync::Mutex<palaver_service::SessionRx>,
    limiter: Mutex<RateLimiter>,
    /// Milliseconds since `epoch` of the last poll, for the idle sweep. Only polls count: a client that only
    /// sends and never collects its replies lets the session expire.
    last: AtomicI64,
}

/// The long-polling sessions of this node, by their random wire sid, and how many each address holds.
pub(crate) struct LpSessions {
    map: Mutex<LpMap>,
    epoch: Instant,
}

#[derive(Default)]
struct LpMap {
    by_sid: HashMap<String, Arc<LpSession>>,
    per_ip: HashMap<IpAddr, usize>,
}

impl LpMap {
    fn remove(&mut self, sid: &str) -> Option<Arc<LpSession>> {
        let lp = self.by_sid.remove(sid)?;
        if let Some(n) = self.per_ip.get_mut(&lp.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&lp.ip);
            }
        }
        Some(lp)
    }
}

impl Default for LpSessions {
    fn default() -> Self {
        LpSessions { map: Mutex::new(LpMap::default()), epoch: Instant::now() }
    }
}

impl LpSessions {
    fn now(&self) -> i64 {
        self.epoch.elapsed().as_millis() as i64
    }

    fn get(&self, sid: &str) -> Option<Arc<LpSession>> {
        self.map.lock().by_sid.get(sid).cloned()
    }

    fn remove(&self, sid: &str) -> Option<Arc<LpSession>> {
        self.map.lock().remove(sid)
    }
}

/// The address a client is counted under: its IPv4 address, or the /64 of an IPv6 one (one subscriber's share,
/// which holds more addresses than anyone could exhaust).
fn address_bucket(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(bits))
        }
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
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
    // The sid is 128 random bits known only to the client that created the session; the tenant must match too.
    let Some(lp) = shared.lp.get(&sid).filter(|s| s.tenant == tenant) else {
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    };
    let limit = shared.cfg.hard_frame_limit();
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return json(StatusCode::PAYLOAD_TOO_LARGE, ctrl_body(Code::TooLarge, None)),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        lp.last.store(shared.lp.now(), Ordering::Relaxed);
        let resp = poll(&shared, &sid, &lp).await;
        lp.last.store(shared.lp.now(), Ordering::Relaxed);
        resp
    } else {
        publish(&shared, &sid, &lp, &body).await
    }
}

fn create(shared: &Arc<Shared>, tenant: TenantId, remote: SocketAddr) -> Response<Body> {
    let cfg = &shared.cfg;
    let ip = address_bucket(remote.ip());
    let mut map = shared.lp.map.lock();
    // Both caps are checked and the slot taken under one lock, so a burst of creations cannot overshoot them.
    if map.by_sid.len() >= cfg.lp_max_sessions {
        shared.service.metrics().refused("lp_total");
        return json(StatusCode::SERVICE_UNAVAILABLE, ctrl_text(Code::ServiceUnavailable, "too many sessions"));
    }
    if map.per_ip.get(&ip).copied().unwrap_or(0) >= cfg.lp_max_sessions_per_ip {
        shared.service.metrics().refused("lp_per_ip");
        let text = "too many long-polling sessions from this address";
        return json(StatusCode::TOO_MANY_REQUESTS, ctrl_text(Code::TooManyRequests, text));
    }
    let (session, rx) = shared.service.open_session(tenant, Transport::LongPoll, Some(remote.to_string()));
    let sid = session.sid();
    let lp = Arc::new(LpSession {
        tenant,
        ip,
        session: tokio::sync::Mutex::new(Some(session)),
        rx: tokio::sync::Mutex::new(rx),
        limiter: Mutex::new(RateLimiter::new(cfg.rate_per_second, cfg.rate_burst)),
        last: AtomicI64::new(shared.lp.now()),
    });
    map.by_sid.insert(sid.clone(), lp);
    *map.per_ip.entry(ip).or_default() += 1;
    drop(map);
    json(StatusCode::CREATED, ctrl_body(Code::Created, Some(json!({ "sid": sid }))))
}

async fn publish(shared: &Shared, sid: &str, lp: &LpSession, body: &Bytes) -> Response<Body> {
    // Checked before the session lock: the limiter's lock is never held across an await.
    let verdict = crate::limits::check_frame(body.len(), shared.cfg.max_message_size, &mut lp.limiter.lock());
    let mut guard = lp.session.lock().await;
    let Some(session) = guard.as_mut() else {
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    };
    if session.is_closed() {
        // Revoked or evicted: the client may never poll for its 205, so the session ends here instead.
        drop(guard);
        close(shared, sid).await;
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    }
    match verdict {
        Ok(()) => session.handle_frame(body).await,
        Err(err) => session.refuse_frame(body, err).await,
    }
    json(StatusCode::OK, Bytes::new())
}

async fn poll(shared: &Shared, sid: &str, lp: &LpSession) -> Response<Body> {
    let mut rx = lp.rx.lock().await;
    // A closed session's last frames (its 205) are still handed out; once they are gone it answers 403, even if
    // its close marker never fit in a full queue.
    if rx.is_empty() && lp.session.try_lock().is_ok_and(|s| s.as_ref().is_none_or(|s| s.is_closed())) {
        drop(rx);
        close(shared, sid).await;
        return json(StatusCode::FORBIDDEN, ctrl_body(Code::InvalidSession, None));
    }
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

/// Closes long-polling sessions that stopped polling. The sweep never waits on a session: it takes the stale
/// ones out of the map under the map's lock and hands each one's clean-up to a task of its own, so a session
/// stuck in a slow request cannot hold up the expiry of the others.
pub(crate) async fn sweep(shared: Arc<Shared>) {
    let timeout = shared.cfg.lp_session_timeout;
    let every = (timeout / 2).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let cutoff = shared.lp.now() - timeout.as_millis() as i64;
        let stale: Vec<Arc<LpSession>> = {
            let mut map = shared.lp.map.lock();
            let sids: Vec<String> = map
                .by_sid
                .iter()
                .filter(|(_, s)| s.last.load(Ordering::Relaxed) < cutoff)
                .map(|(k, _)| k.clone())
                .collect();
            sids.iter().filter_map(|sid| map.remove(sid)).collect()
        };
        for lp in stale {
            tokio::spawn(async move {
                // A request still inside the session holds its lock until its reply is queued or its send
                // deadline passes; only this task waits for that.
                let session = lp.session.lock().await.take();
                if let Some(session) = session {
                    session.close().await;
                }
            });
        }
    }
}

fn preflight() -> Response<Body> {
    let mut resp = Response::new(crate::http::full(bytes::Bytes::new()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(ip: &str) -> IpAddr {
        address_bucket(ip.parse().unwrap())
    }

    #[test]
    fn ipv6_clients_count_per_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(bucket("2001:db8:1:2:aaaa::1"), bucket("2001:db8:1:2:bbbb::9"));
        assert_ne!(bucket("2001:db8:1:2::1"), bucket("2001:db8:1:3::1"));
        assert_eq!(bucket("::ffff:192.0.2.7"), bucket("192.0.2.7"));
        assert_ne!(bucket("192.0.2.7"), bucket("192.0.2.8"));
    }
}
