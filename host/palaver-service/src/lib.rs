//! Palaver's use cases over the ports: a [`Session`] per connection speaks Tinode, the node-local [`Hub`]
//! routes what it publishes, and the ports keep what must survive.
//!
//! **Invariant:** this crate names no adapter and does no network or disk I/O of its own; it reaches storage,
//! presence and seq allocation only through `palaver_core::ports`.

mod apply;
pub mod auth;
mod business;
mod control;
mod delivery;
mod error;
mod handlers;
mod hub;
mod metrics;
mod realtime;
mod render;
mod session;
mod topics;

pub use business::{BLOCKED, BizError, BizResult, GROUP_MUTED};
pub use control::Eviction;
pub use error::{ServiceError, ServiceResult};
pub use hub::{Attached, Frame, Hub, Outbound, SessionHandle};
pub use metrics::Metrics;
pub use session::{Session, Transport};

use auth::{HashCost, TokenSigner};
use palaver_core::ports::Ports;
use palaver_core::{SessionId, TenantId, UnixMillis};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use topics::TopicLocks;

/// The service's settings, validated by the server before it starts.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This node's id, as presence and the bus know it.
    pub node_id: String,
    /// How long a login token stays valid.
    pub token_ttl: Duration,
    /// Argon2 cost for new password hashes.
    pub hash_cost: HashCost,
    /// The largest client frame, advertised in the `{hi}` reply as `maxMessageSize`.
    pub max_message_size: usize,
    /// The most subscribers a group may have.
    pub max_subscriber_count: usize,
    pub min_tag_length: usize,
    pub max_tag_length: usize,
    pub max_tag_count: usize,
    /// `{get data}` pages without a limit get this many messages; larger limits are capped at `max_page`.
    pub default_page: usize,
    pub max_page: usize,
    /// Frames queued per session before fanout starts dropping for it.
    pub session_queue: usize,
    /// Longest accepted `client_mid`, in bytes.
    pub max_client_mid: usize,
    /// A new login with the same `platf` (from `{hi}`) closes the user's older sessions of that platform.
    pub evict_same_platform: bool,
    /// Remote events queued for this node before the bus receiver starts dropping them.
    pub bus_queue: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            node_id: "local".into(),
            token_ttl: Duration::from_secs(14 * 24 * 3600),
            hash_cost: HashCost::default(),
            max_message_size: 256 * 1024,
            max_subscriber_count: 4096,
            min_tag_length: 2,
            max_tag_length: 96,
            max_tag_count: 16,
            default_page: 32,
            max_page: 100,
            session_queue: 512,
            max_client_mid: 64,
            evict_same_platform: false,
            bus_queue: 65_536,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) ports: Ports,
    pub(crate) hub: Hub,
    pub(crate) cfg: ServiceConfig,
    pub(crate) signer: TokenSigner,
    pub(crate) topics: TopicLocks,
    pub(crate) metrics: Arc<Metrics>,
    next_sid: AtomicU64,
    draining: AtomicBool,
    /// Sessions between leaving the hub and finishing their clean-up (presence, last seen), which shutdown
    /// waits for before the store closes.
    pub(crate) closing: std::sync::atomic::AtomicUsize,
}

/// The service: cheap to clone, shared by every transport.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

impl Service {
    /// A service over `ports`, signing tokens with `signer`.
    pub fn new(ports: Ports, cfg: ServiceConfig, signer: TokenSigner) -> Self {
        let seed = rand::random::<u32>() as u64;
        let svc = Service {
            inner: Arc::new(Inner {
                ports,
                hub: Hub::default(),
                cfg,
                signer,
                topics: TopicLocks::default(),
                metrics: Arc::new(Metrics::default()),
                next_sid: AtomicU64::new(seed << 24),
                draining: AtomicBool::new(false),
                closing: std::sync::atomic::AtomicUsize::new(0),
            }),
        };
        if svc.inner.ports.bus.is_shared() {
            if tokio::runtime::Handle::try_current().is_ok() {
                realtime::start(&svc.inner, svc.inner.cfg.bus_queue);
            } else {
                tracing::error!("a shared bus needs a runtime to start its receiver; remote events are ignored");
            }
        }
        svc
    }

    /// Opens a session for a new connection of `tenant`. The receiver yields what to write to the client.
    pub fn open_session(
        &self,
        tenant: TenantId,
        transport: Transport,
        remote: Option<String>,
    ) -> (Session, mpsc::Receiver<Outbound>) {
        let sid = SessionId(self.inner.next_sid.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = mpsc::channel(self.inner.cfg.session_queue.max(8));
        let handle = Arc::new(SessionHandle::new(sid, tenant, tx, self.inner.metrics.clone()));
        self.inner.metrics.session_opened();
        self.inner.hub.register(handle.clone());
        (Session::new(self.inner.clone(), handle, transport, remote), rx)
    }

    /// This node's hub.
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// The node's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The Prometheus text exposition of the node's metrics.
    pub fn render_metrics(&self) -> String {
        self.inner.metrics.render(self.inner.hub.session_count())
    }

    /// The service's settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.inner.cfg
    }

    /// Releases or rejects a held message. Releasing delivers it to every attached reader, as if just published.
    pub async fn set_message_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: palaver_core::Seq,
        audit: palaver_core::AuditStatus,
    ) -> ServiceResult<()> {
        let msg = self.inner.ports.messages.set_audit(tenant, topic, seq, audit).await?;
        if audit == palaver_core::AuditStatus::Pass {
            self.inner.fan_out(tenant, &msg, None).await;
        }
        Ok(())
    }

    /// Delivers a business event (from a plugin) to its sessions on every node, in the seed's `{info}` form: to
    /// every session of a user as `{info topic:"me", what:"im"}`, or to the sessions attached to a topic as
    /// `{info topic:<topic>, what:"group"}`. Returns how many sessions of this node it was queued to.
    pub fn emit_event(&self, tenant: TenantId, target: EventTarget, event: &str, payload: serde_json::Value) -> usize {
        let to = match target {
            EventTarget::User(u) => realtime::BusinessTarget::User(u),
            EventTarget::Topic(t) => realtime::BusinessTarget::Topic(t),
        };
        self.inner.emit_business(tenant, to, event, &payload, None)
    }

    /// The user a login token belongs to in `tenant`, checked as `{login scheme:"token"}` checks it: signature,
    /// expiry, tenant, the account's current `auth_version` and state. Used by the HTTP API.
    pub async fn authenticate_token(&self, tenant: TenantId, token: &str) -> ServiceResult<palaver_core::UserId> {
        let claims = self.inner.signer.verify(token, now_millis()).map_err(|_| ServiceError::AuthFailed)?;
        if claims.tenant != tenant {
            return Err(ServiceError::AuthFailed);
        }
        let user = self.inner.ports.users.get_user(tenant, claims.user).await?.ok_or(ServiceError::AuthFailed)?;
        if user.auth_version != claims.auth_version || user.state != palaver_core::RecordState::Active {
            return Err(ServiceError::AuthFailed);
        }
        Ok(user.id)
    }

    /// Sessions still open or still finishing their clean-up; shutdown waits for zero.
    pub fn sessions_pending(&self) -> usize {
        self.inner.hub.session_count() + self.inner.closing.load(Ordering::Relaxed)
    }

    /// The last step of a shutdown: sessions whose clients never answered the close are taken out of the shared
    /// presence here, so that other nodes do not show them online until the presence TTL.
    pub async fn release_presence(&self) {
        let now = now_millis();
        for s in self.inner.hub.all_sessions() {
            if let Some(user) = s.user() {
                if let Err(e) = self.inner.ports.presence.mark_offline(s.tenant, user, &s.sid.to_string(), now).await {
                    tracing::debug!(error = %e, "presence not released");
                }
                self.inner.leave_online_all(s.tenant, user).await;
            }
        }
    }

    /// True once draining has begun.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Relaxed)
    }

    /// Starts draining: every session gets `{ctrl 205 "server shutdown"}` and is closed.
    pub fn drain(&self) {
        self.inner.draining.store(true, Ordering::Relaxed);
        let now = now_millis();
        let frame = render::ctrl_frame(None, None, palaver_proto::Code::ServerShutdown, now, None);
        for s in self.inner.hub.all_sessions() {
            s.push(frame.clone());
            s.close();
        }
    }
}

/// Whom a business event goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventTarget {
    /// Every session of the user.
    User(palaver_core::UserId),
    /// The sessions attached to the stored topic.
    Topic(String),
}

/// The wall clock in Unix milliseconds.
pub(crate) fn now_millis() -> UnixMillis {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}
