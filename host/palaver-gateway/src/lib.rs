//! The network edge: one HTTP/1.1 listener serving Tinode's WebSocket (`/v0/channels`) and long-polling
//! (`/v0/channels/lp`) transports, health probes, API-key checks and per-session limits.
//!
//! **Invariant:** this is the only crate that knows HTTP or WebSocket. It turns bytes into calls on
//! `palaver_service::Session` and never touches storage.

mod admin;
pub mod apikey;
mod http;
mod im;
mod limits;
mod longpoll;
mod users;
mod ws;

pub use admin::{Admin, NoPlugins};
use apikey::TenantResolver;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
pub use im::{ImCall, ImCommands, ImOutcome};
use palaver_service::Service;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Transport settings, validated by the server before it starts.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Largest client message in bytes; larger ones get ctrl 413. Also advertised in `{hi}`.
    pub max_message_size: usize,
    /// Messages per second a session may send on average (0 disables the limit).
    pub rate_per_second: f64,
    /// Messages a session may send in a burst.
    pub rate_burst: u32,
    /// WebSocket read buffer per connection. Small buffers keep idle connections cheap.
    pub ws_read_buffer: usize,
    /// WebSocket write buffer per connection.
    pub ws_write_buffer: usize,
    /// A WebSocket that sends nothing (not even a pong) for this long is closed.
    pub idle_timeout: Duration,
    /// How often the server pings a WebSocket client.
    pub ping_interval: Duration,
    /// How long a long poll waits for a message before answering empty.
    pub lp_poll_timeout: Duration,
    /// A long-polling session with no request for this long is closed.
    pub lp_session_timeout: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            max_message_size: 256 * 1024,
            rate_per_second: 50.0,
            rate_burst: 200,
            ws_read_buffer: 4096,
            ws_write_buffer: 0,
            idle_timeout: Duration::from_secs(55),
            ping_interval: Duration::from_secs(25),
            lp_poll_timeout: Duration::from_secs(25),
            lp_session_timeout: Duration::from_secs(60),
        }
    }
}

impl GatewayConfig {
    /// The largest frame the transport reads at all. Frames between `max_message_size` and this are read so
    /// that the 413 reply can echo their id; beyond it the connection is closed.
    pub(crate) fn hard_frame_limit(&self) -> usize {
        self.max_message_size.saturating_mul(4).max(self.max_message_size + 64 * 1024)
    }
}

pub(crate) struct Shared {
    pub(crate) service: Service,
    pub(crate) cfg: GatewayConfig,
    pub(crate) tenants: Arc<dyn TenantResolver>,
    pub(crate) ready: AtomicBool,
    pub(crate) lp: longpoll::LpSessions,
    pub(crate) stop: watch::Receiver<bool>,
    /// The admin API and its bearer token, when the node has one.
    pub(crate) admin: Option<(Arc<dyn Admin>, String)>,
    /// What runs the `/v1/im/` API's business commands, when the node has plugins.
    pub(crate) commands: Option<Arc<dyn ImCommands>>,
}

/// The gateway: cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    stop_tx: Arc<watch::Sender<bool>>,
}

impl Gateway {
    /// A gateway in front of `service`, resolving tenants from API keys with `tenants`.
    pub fn new(
        service: Service,
        cfg: GatewayConfig,
        tenants: Arc<dyn TenantResolver>,
        admin: Option<(Arc<dyn Admin>, String)>,
        commands: Option<Arc<dyn ImCommands>>,
    ) -> Self {
        let (stop_tx, stop) = watch::channel(false);
        Gateway {
            shared: Arc::new(Shared {
                service,
                cfg,
                tenants,
                ready: AtomicBool::new(true),
                lp: longpoll::LpSessions::default(),
                stop,
                admin,
                commands,
            }),
            stop_tx: Arc::new(stop_tx),
        }
    }

    /// Accepts connections until [`Gateway::stop`] is called.
    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let sweeper = tokio::spawn(longpoll::sweep(self.shared.clone()));
        let mut stop = self.shared.stop.clone();
        loop {
            let (stream, remote) = tokio::select! {
                r = listener.accept() => r?,
                _ = stop.changed() => break,
            };
            let _ = stream.set_nodelay(true);
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| http::route(shared.clone(), req, remote));
                let conn = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc);
                if let Err(e) = conn.with_upgrades().await {
                    tracing::debug!(error = %e, "http connection ended with an error");
                }
            });
        }
        sweeper.abort();
        Ok(())
    }

    /// Marks the node not ready (`/readyz` answers 503) so that load balancers stop sending clients.
    pub fn set_ready(&self, ready: bool) {
        self.shared.ready.store(ready, Ordering::Relaxed);
    }

    /// Stops accepting connections.
    pub fn stop(&self) {
        let _ = self.stop_tx.send(true);
    }

    /// The service behind the gateway.
    pub fn service(&self) -> &Service {
        &self.shared.service
    }
}
