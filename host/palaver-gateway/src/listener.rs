//! The accept loops and the life of one connection. A loop backs off on accept errors (EMFILE and the like)
//! and goes on, and is restarted if it ever ends with an error or panics; every connection is counted by a
//! guard inside its socket, so whichever way it ends (HTTP, WebSocket, timeout, panic) the count goes down;
//! connections beyond `max_connections` are answered 503 and closed; and hyper's header-read timeout and our
//! idle timeout close connections that send nothing useful.

use crate::Shared;
use crate::http::{Body, route, text};
use http::{Response, StatusCode, header};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use palaver_service::{Metrics, Service};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Which routes a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Routes {
    /// Everything: the transports, the APIs, the probes (and `/metrics` unless it has its own listener).
    Main,
    /// `/metrics` alone (`server.metrics_listen`).
    Metrics,
}

/// The first wait after a failed accept; it doubles on every failure in a row up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Serves `listener` until the gateway stops.
pub(crate) async fn serve(shared: Arc<Shared>, listener: TcpListener, routes: Routes) {
    let listener = Arc::new(listener);
    let service = shared.service.clone();
    let stop = shared.stop.clone();
    supervised(service.metrics(), stop, || accept_loop(shared.clone(), listener.clone(), routes)).await;
}

/// Runs `run` on its own task until it returns `Ok` (the node is stopping). An error or a panic restarts it
/// after a backoff and is counted, so that a failed accept loop never leaves the node silently not serving.
pub(crate) async fn supervised<F, Fut>(metrics: &Metrics, stop: watch::Receiver<bool>, mut run: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = io::Result<()>> + Send + 'static,
{
    let mut backoff = BACKOFF_MIN;
    loop {
        match tokio::spawn(run()).await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => tracing::error!(error = %e, "the accept loop failed; restarting it"),
            Err(e) => tracing::error!(error = %e, "the accept loop panicked; restarting it"),
        }
        if *stop.borrow() {
            return;
        }
        metrics.accept_restart();
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Accepts connections until the gateway stops. A failed accept is logged, counted and retried after a
/// backoff: EMFILE, ENFILE or ENOBUFS last until connections close, and retrying at once would spin.
async fn accept_loop(shared: Arc<Shared>, listener: Arc<TcpListener>, routes: Routes) -> io::Result<()> {
    let mut stop = shared.stop.clone();
    let mut backoff = BACKOFF_MIN;
    loop {
        if *stop.borrow_and_update() {
            return Ok(());
        }
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.changed() => return Ok(()),
        };
        match accepted {
            Ok((stream, remote)) => {
                backoff = BACKOFF_MIN;
                admit(&shared, stream, remote, routes);
            }
            Err(e) => {
                shared.service.metrics().accept_error();
                tracing::warn!(error = %e, retry_ms = backoff.as_millis() as u64, "accept failed; backing off");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = stop.changed() => return Ok(()),
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Counts a new connection (on the main listener) and spawns its task. Counting happens here, in accept
/// order, so the connection that goes over the cap is the one refused.
fn admit(shared: &Arc<Shared>, stream: TcpStream, remote: SocketAddr, routes: Routes) {
    let _ = stream.set_nodelay(true);
    let (guard, over) = match routes {
        Routes::Main => {
            let open = shared.service.metrics().connection_opened();
            (Some(ConnGuard(shared.service.clone())), open > shared.cfg.max_connections as u64)
        }
        Routes::Metrics => (None, false),
    };
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked { io: stream, activity: activity.clone(), _guard: guard });
    let shared = shared.clone();
    tokio::spawn(connection(shared, io, activity, remote, routes, over));
}

/// Serves one connection: HTTP/1.1 with upgrades, until it ends, times out or goes idle. An `over` connection
/// is answered 503 to whatever it asks and closed.
async fn connection(
    shared: Arc<Shared>,
    io: TokioIo<Tracked>,
    activity: Arc<Activity>,
    remote: SocketAddr,
    routes: Routes,
    over: bool,
) {
    if over {
        shared.service.metrics().connection_refused();
        tracing::debug!(%remote, "too many connections; answering 503");
    }
    let svc = {
        let shared = shared.clone();
        hyper::service::service_fn(move |req| {
            let shared = shared.clone();
            async move {
                if over {
                    return Ok::<_, Infallible>(busy());
                }
                route(shared, req, remote, routes).await
            }
        })
    };
    let cfg = &shared.cfg;
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(cfg.header_timeout).keep_alive(!over);
    let conn = builder.serve_connection(io, svc).with_upgrades();
    tokio::pin!(conn);
    let idle = cfg.http_idle_timeout;
    loop {
        tokio::select! {
            r = &mut conn => {
                if let Err(e) = r {
                    if e.is_timeout() {
                        shared.service.metrics().connection_timeout("header");
                    }
                    tracing::debug!(error = %e, %remote, "http connection ended with an error");
                }
                return;
            }
            () = tokio::time::sleep_until(activity.deadline(idle).into()) => {
                // Nothing moved either way for the whole idle timeout (a long poll's wait is shorter, which
                // the configuration checks): a stalled body, a response nobody reads, a forgotten keep-alive.
                if activity.deadline(idle) <= Instant::now() {
                    shared.service.metrics().connection_timeout("http_idle");
                    tracing::debug!(%remote, "http connection idle; closed");
                    return;
                }
            }
        }
    }
}

/// The answer to a connection over `max_connections`.
fn busy() -> Response<Body> {
    let mut resp = text(StatusCode::SERVICE_UNAVAILABLE, "too many connections");
    resp.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    resp
}

/// Counts a connection open while it lives; it sits inside the socket, so it is dropped with the socket
/// whichever task holds it last (the HTTP connection or, after an upgrade, the WebSocket).
struct ConnGuard(Service);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.metrics().connection_closed();
    }
}

/// When bytes last moved on a connection, in milliseconds since it opened.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity { start: Instant::now(), last_ms: AtomicU64::new(0) }
    }

    fn touch(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// When the connection counts as idle if nothing moves before.
    fn deadline(&self, idle: Duration) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed)) + idle
    }
}

/// A client socket that records activity and carries the connection's guard.
struct Tracked {
    io: TcpStream,
    activity: Arc<Activity>,
    _guard: Option<ConnGuard>,
}

impl AsyncRead for Tracked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test]
    async fn a_failed_or_panicking_accept_loop_is_restarted_until_it_ends_cleanly() {
        let metrics = Metrics::default();
        let (_tx, stop) = watch::channel(false);
        let runs = Arc::new(AtomicUsize::new(0));
        supervised(&metrics, stop, || {
            let runs = runs.clone();
            async move {
                match runs.fetch_add(1, Ordering::SeqCst) {
                    0 => Err(io::Error::other("listener broke")),
                    1 => panic!("a bug in the loop"),
                    _ => Ok(()),
                }
            }
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 3, "restarted after the error and after the panic");
        assert!(palaver_core::render_metrics(&metrics).contains("palaver_accept_restarts_total 2"));
    }

    #[tokio::test]
    async fn a_stopping_node_does_not_restart_its_accept_loop() {
        let metrics = Metrics::default();
        let (tx, stop) = watch::channel(false);
        tx.send(true).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        supervised(&metrics, stop, || {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Err(io::Error::other("closed"))
            }
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
