//! The WebSocket transport: the upgrade handshake on hyper, then one reader task that feeds the session and
//! one writer task that drains the session's queue, batching frames per flush.
//!
//! Every wait has an end: the upgrade and the client's first frame must come within the handshake timeout,
//! later frames within the idle timeout, and every write or flush within the write timeout. A writer that
//! gives up (or whose session overflowed its queue) ends the reader too, so the connection closes.

use crate::Shared;
use crate::http::{Body, bad_key, tenant_of, text};
use crate::limits::RateLimiter;
use futures_util::{SinkExt, StreamExt};
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use palaver_service::{Outbound, SessionRx, Transport};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, timeout, timeout_at};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// How long a connection the server closed may stay open for its last frames to reach the client.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a finished connection waits for its writer to flush before the socket is dropped anyway.
const WRITER_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

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
    let deadline = Instant::now() + shared.cfg.ws_handshake_timeout;
    tokio::spawn(async move {
        match timeout_at(deadline, on_upgrade).await {
            Ok(Ok(upgraded)) => run(shared, TokioIo::new(upgraded), tenant, remote, deadline).await,
            Ok(Err(e)) => tracing::debug!(error = %e, "websocket upgrade failed"),
            Err(_) => {
                // The 101 was never taken up; the HTTP connection's idle timeout closes the socket.
                shared.service.metrics().connection_timeout("ws_handshake");
                tracing::debug!(%remote, "websocket upgrade timed out");
            }
        }
    });
    let mut resp = Response::new(crate::http::full(bytes::Bytes::new()));
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
    handshake_deadline: Instant,
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
    let mut writer = tokio::spawn(write_loop(sink, rx, cfg.ping_interval, cfg.write_timeout, shared.clone()));
    let mut writer_done = false;
    let mut limiter = RateLimiter::new(cfg.rate_per_second, cfg.rate_burst);
    let max = cfg.max_message_size;
    let mut first = true;
    loop {
        // Until the first frame the handshake deadline applies, then the idle timeout.
        let deadline = if first { handshake_deadline } else { Instant::now() + cfg.idle_timeout };
        let next = tokio::select! {
            next = timeout_at(deadline, stream.next()) => next,
            _ = &mut writer => {
                // The writer gave up (a write timed out, the queue overflowed, the peer is gone): so do we.
                writer_done = true;
                break;
            }
            () = session.closed() => {
                // The server closed the session (revoked, evicted, drained): the writer sends what is queued,
                // the 205 included, and a close frame; after a short grace the connection is dropped whether
                // or not the client answers, so a client that ignores the close cannot linger.
                tokio::time::sleep(CLOSE_GRACE).await;
                break;
            }
        };
        let msg = match next {
            Err(_) if first => {
                shared.service.metrics().connection_timeout("ws_handshake");
                tracing::debug!(sid = %session.sid(), "websocket: no first frame in time");
                break;
            }
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
        first = false;
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
        if let Err(err) = crate::limits::check_frame(data.len(), max, &mut limiter) {
            Box::pin(session.refuse_frame(data, err)).await;
            continue;
        }
        Box::pin(session.handle_frame(data)).await;
    }
    Box::pin(session.close()).await;
    // The writer ends once the session's queue is closed (every handle dropped) and drained; past the grace it
    // is dropped with the socket, whatever it was waiting for.
    if !writer_done && tokio::time::timeout(WRITER_GRACE, &mut writer).await.is_err() {
        writer.abort();
    }
}

async fn write_loop<S>(mut sink: S, mut rx: SessionRx, ping: Duration, limit: Duration, shared: Arc<Shared>)
where
    S: futures_util::Sink<Message> + Unpin,
{
    let mut ticker = tokio::time::interval(ping);
    ticker.tick().await;
    // Each write, flush or close must finish within `limit`: a peer that stops reading fills its socket
    // buffer, and then every write waits until it is disconnected here.
    let timed_out = || {
        shared.service.metrics().connection_timeout("write");
        tracing::debug!("websocket write timed out; disconnecting a peer that does not read");
    };
    loop {
        tokio::select! {
            out = rx.recv() => {
                let Some(out) = out else { break };
                let mut closing = false;
                match timeout(limit, feed(&mut sink, out, &mut closing)).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(_) => return timed_out(),
                }
                // Batch whatever else is already queued into the same flush.
                while !closing {
                    match rx.try_recv() {
                        Ok(out) => match timeout(limit, feed(&mut sink, out, &mut closing)).await {
                            Ok(true) => {}
                            Ok(false) => return,
                            Err(_) => return timed_out(),
                        },
                        Err(_) => break,
                    }
                }
                match timeout(limit, sink.flush()).await {
                    Ok(Ok(())) if !closing => {}
                    Ok(_) => {
                        let _ = timeout(limit, sink.close()).await;
                        return;
                    }
                    Err(_) => return timed_out(),
                }
            }
            _ = ticker.tick() => {
                match timeout(limit, sink.send(Message::Ping(Default::default()))).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return,
                    Err(_) => return timed_out(),
                }
            }
        }
    }
    if !rx.overflowed() {
        let _ = timeout(limit, sink.close()).await;
    }
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
