//! The network edge: one HTTP/1.1 listener serving Tinode's WebSocket (`/v0/channels`) and long-polling
//! (`/v0/channels/lp`) transports, its out-of-band files (`/v0/file/u/`, `/v0/file/s/`), health probes, API-key
//! checks and per-session limits.
//!
//! **Invariant:** this is the only crate that knows HTTP or WebSocket. It turns bytes into calls on
//! `palaver_service::Session`. It names no storage adapter: the only port it calls itself is the tenant
//! registry's `TenantStore`, to resolve API keys (`apikey/registry.rs`), and the `HealthCheck`s it is handed for
//! `/readyz` (`ready.rs`); everything else goes through the service.

mod admin;
pub mod apikey;
mod audit;
mod files;
mod http;
mod identity;
mod im;
mod limits;
mod listener;
mod longpoll;
mod ready;
mod route;
mod users;
mod ws;

pub use admin::{Admin, AdminRefusal, NoPlugins, PluginUpload};
use apikey::TenantResolver;
pub use im::{ImCall, ImCommands, ImOutcome, PluginCall};
use palaver_core::ports::HealthCheck;
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
    /// A long-polling session that has not polled for this long is closed.
    pub lp_session_timeout: Duration,
    /// Most long-polling sessions on this node; creations beyond it answer 503.
    pub lp_max_sessions: usize,
    /// Most long-polling sessions one client address may hold; creations beyond it answer 429.
    pub lp_max_sessions_per_ip: usize,
    /// Connections open at once on the main listener; the ones beyond are answered 503 and closed.
    pub max_connections: usize,
    /// A client must send a request's headers within this long (hyper's header-read timeout), also while a
    /// keep-alive connection waits for its next request.
    pub header_timeout: Duration,
    /// An HTTP connection on which no byte moves either way for this long is closed (a stalled body, a
    /// response nobody reads). Longer than `lp_poll_timeout`, so that a long poll's wait is not idle.
    pub http_idle_timeout: Duration,
    /// From the upgrade request, the WebSocket upgrade must complete and the client's first frame arrive
    /// within this long.
    pub ws_handshake_timeout: Duration,
    /// A WebSocket write or flush that does not finish within this long disconnects the peer: it stopped
    /// reading.
    pub write_timeout: Duration,
    /// `/metrics` has a listener of its own ([`Gateway::serve_metrics`]); the main listener answers 404 for it.
    pub metrics_listener: bool,
    /// `/metrics` needs `Authorization: Bearer <admin token>`, wherever it is served.
    pub protect_metrics: bool,
    /// Log every HTTP request (target `palaver::access`): method, path without its query, status, time, client.
    pub access_log: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            max_message_size: 256 * 1024,
            rate_per_second: 50.0,
            rate_burst: 200,
            ws_read_buffer: 1024,
            ws_write_buffer: 0,
            idle_timeout: Duration::from_secs(55),
            ping_interval: Duration::from_secs(25),
            lp_poll_timeout: Duration::from_secs(25),
            lp_session_timeout: Duration::from_secs(60),
            lp_max_sessions: 10_000,
            lp_max_sessions_per_ip: 1000,
            max_connections: 50_000,
            header_timeout: Duration::from_secs(10),
            http_idle_timeout: Duration::from_secs(90),
            ws_handshake_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            metrics_listener: false,
            protect_metrics: false,
            access_log: false,
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
    /// The dependency checks behind `/readyz`.
    pub(crate) readiness: ready::Readiness,
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
        health: Vec<Arc<dyn HealthCheck>>,
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
                readiness: ready::Readiness::new(health),
            }),
            stop_tx: Arc::new(stop_tx),
        }
    }

    /// Accepts connections until [`Gateway::stop`] is called. Accept errors back off and the loop goes on; a
    /// loop that fails anyway is restarted, so this returns only when the gateway stops.
    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let sweeper = tokio::spawn(longpoll::sweep(self.shared.clone()));
        listener::serve(self.shared.clone(), listener, listener::Routes::Main).await;
        sweeper.abort();
        Ok(())
    }

    /// Serves `/metrics` alone on `listener` (`server.metrics_listen`) until [`Gateway::stop`] is called.
    pub async fn serve_metrics(&self, listener: TcpListener) -> std::io::Result<()> {
        listener::serve(self.shared.clone(), listener, listener::Routes::Metrics).await;
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
