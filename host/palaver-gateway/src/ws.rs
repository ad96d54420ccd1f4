//! The WebSocket transport: the upgrade handshake on hyper, then one reader task that feeds the session and
//! one writer task that drains the session's queue, batching frames per flush.

use crate::Shared;
use crate::http::{Body, bad_key, tenant_of, text};
use crate::limits::RateLimiter;
use futures_util::{SinkExt, StreamExt};
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use palaver_service::{Outbound, ServiceError, Transport};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// Answers the upgrade request and spawns the connection.
pub(crate) async fn upgrade(shared: Arc<Shared>, mut req: Request<Incoming>, remote: SocketAddr) -> Response<Body> {
    let Some(tenant) = tenant_of(&shared, &req).await else { return bad_key() };
    if shared.service.is_draining() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "draining");
    }
    let headers = req.headers();
    let is_upgrade =
        headers.get(header::UPGRADE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).filter(|_| is_upgrade) else {
        return text(StatusCode::BAD_REQUEST, "websocket upgrade required");
    };
    let accept = derive_accept_key(key.as_bytes());
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => run(shared, TokioIo::new(upgraded), tenant, remote).await,
            Err(e) => tracing::debug!(error = %e, "websocket upgrade failed"),
        }
    });
    let mut resp = Response::new(Full::default());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, header::HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, header::HeaderValue::from_static("Upgrade"));
    if let Ok(v) = header::HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

async fn run(
    shared: Arc<Shared>,
    io: TokioIo<hyper::upgrade::Upgraded>,
    tenant: palaver_core::TenantId,
    remote: SocketAddr,
) {
    let cfg = &shared.cfg;
    let ws_cfg = WebSocketConfig::default()
        .read_buffer_size(cfg.ws_read_buffer)
        .write_buffer_size(cfg.ws_write_buffer)
        .max_message_size(Some(cfg.hard_frame_limit()))
        .max_frame_size(Some(cfg.hard_frame_limit()));
    let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(ws_cfg)).await;
    let (sink, mut stream) = ws.split();
    let (mut session, rx) = shared.service.open_session(tenant, Transport::WebSocket, Some(remote.to_string()));
    let writer = tokio::spawn(write_loop(sink, rx, cfg.ping_interval));
    let mut limiter = RateLimiter::new(cfg.rate_per_second, cfg.rate_burst);
    let max = cfg.max_message_size;
    loop {
        let next = tokio::time::timeout(cfg.idle_timeout, stream.next()).await;
        let msg = match next {
            Err(_) => {
                tracing::debug!(sid = %session.sid(), "websocket idle timeout");
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                tracing::debug!(sid = %session.sid(), error = %e, "websocket read error");
                break;
            }
            Ok(Some(Ok(m))) => m,
        };
        let data: &[u8] = match &msg {
            Message::Text(t) => t.as_bytes(),
            Message::Binary(b) => b,
            // tungstenite queues the pong for a ping itself and sends it with the next write or flush.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            Message::Close(_) => break,
        };
        if data == b"1" {
            // Tinode's keep-alive probe: the client sends "1", the server answers "0".
            session.send_raw(bytes::Bytes::from_static(b"0")).await;
            continue;
        }
        // The handler futures are boxed so that their (large) state is allocated only while a frame is being
        // handled: an idle connection's task then holds just this loop's few locals.
        if data.len() > max {
            let err = ServiceError::TooLarge(format!("the limit is {max} bytes"));
            Box::pin(session.refuse_frame(data, err)).await;
            continue;
        }
        if !limiter.allow() {
            Box::pin(session.refuse_frame(data, ServiceError::TooManyRequests)).await;
            continue;
        }
        Box::pin(session.handle_frame(data)).await;
    }
    Box::pin(session.close()).await;
    // The writer ends once the session's queue is closed (every handle dropped) and drained.
    let _ = writer.await;
}

async fn write_loop<S>(mut sink: S, mut rx: mpsc::Receiver<Outbound>, ping: std::time::Duration)
where
    S: futures_util::Sink<Message> + Unpin,
{
    let mut ticker = tokio::time::interval(ping);
    ticker.tick().await;
    loop {
        tokio::select! {
            out = rx.recv() => {
                let Some(out) = out else { break };
                let mut closing = false;
                if !feed(&mut sink, out, &mut closing).await { return; }
                // Batch whatever else is already queued into the same flush.
                while !closing {
                    match rx.try_recv() {
                        Ok(out) => if !feed(&mut sink, out, &mut closing).await { return; },
                        Err(_) => break,
                    }
                }
                if sink.flush().await.is_err() || closing {
                    let _ = sink.close().await;
                    return;
                }
            }
            _ = ticker.tick() => {
                if sink.send(Message::Ping(Default::default())).await.is_err() { return; }
            }
        }
    }
    let _ = sink.close().await;
}

/// Feeds one outbound item into the sink without flushing. Returns false if the connection is broken.
async fn feed<S>(sink: &mut S, out: Outbound, closing: &mut bool) -> bool
where
    S: futures_util::Sink<Message> + Unpin,
{
    match out {
        Outbound::Frame(frame) => match Utf8Bytes::try_from(frame) {
            Ok(text) => sink.feed(Message::Text(text)).await.is_ok(),
            Err(_) => {
                tracing::error!("a server frame was not UTF-8; dropped");
                true
            }
        },
        Outbound::Close => {
            *closing = true;
            true
        }
    }
}
