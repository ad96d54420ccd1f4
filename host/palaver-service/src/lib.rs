//! Palaver's use cases over the ports: a [`Session`] per connection speaks Tinode, the node-local [`Hub`]
//! routes what it publishes, and the ports keep what must survive.
//!
//! **Invariant:** this crate names no adapter and does no network or disk I/O of its own; it reaches storage,
//! presence and seq allocation only through `palaver_core::ports`.

pub mod admin;
pub mod auth;
pub mod backbone;
mod business;
mod delivery;
mod error;
mod handlers;
pub mod jwt;
mod metrics;
mod names;
mod render;
mod session;
mod throttle;
mod usecases;

pub use backbone::scan::{ScanWorker, ScanWorkerConfig};
pub use backbone::{Backbone, Summary, new_event_id};
pub use business::{BizError, BizResult};
pub use delivery::hub::{Attached, Frame, Hub, Outbound, SessionHandle, SessionRx};
pub use error::{ServiceError, ServiceResult};
pub use metrics::{LiveGauge, Metrics};
pub use usecases::calls::{CallConfig, IceServer, turn_credentials};
pub use usecases::credentials::{CredentialsConfig, METHODS as CREDENTIAL_METHODS};
pub use usecases::deletion::{AccountDeleted, DeleteMode};
pub use usecases::edits::EditConfig;
pub use usecases::eviction::Eviction;
pub use usecases::files::{
    ByteRange, Download, FileScanTask, FilesConfig, UploadMeta, file_url, mime_pattern_ok, scan_record,
};
pub use usecases::identity::UserKey;

/// The actor of an admin command where a user id is stored (`granted_by`, `muted_by`, `recalled_by`) or an event
/// needs a sender: no user has id 0. At the crate root because business commands, admin effects and push all
/// name it, and none of them should import another for it.
pub(crate) const ADMIN_ACTOR: palaver_core::UserId = palaver_core::UserId(0);

/// The content type of [`Service::render_metrics`]: the OpenMetrics text format, which Prometheus reads.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub use render::ctrl_frame;
pub use session::{Session, Transport};
pub use throttle::{LoginLimits, MAX_TRACKED};

use auth::{HashCost, HashPool, TokenSigner};
use delivery::topics::LoadedTopics;
use palaver_core::ports::Ports;
use palaver_core::{SessionId, TenantId};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The service's settings, validated by the server before it starts.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This node's id, as presence and the bus know it.
    pub node_id: String,
    /// How long a login token stays valid.
    pub token_ttl: Duration,
    /// Argon2 cost for new password hashes.
    pub hash_cost: HashCost,
    /// Argon2 hashes and verifications running at once (the rest wait); 0 means one per core.
    pub hash_concurrency: usize,
    /// Failed-login counters and their backoff.
    pub login_limits: LoginLimits,
    /// A password change from a logged-in session must prove the current password (`tmpscheme`/`tmpsecret`).
    pub password_change_requires_current: bool,
    /// Groups one user may belong to (create, join or be invited to over the socket); 0 means no limit.
    pub max_groups_per_user: usize,
    /// Sessions one user may have logged in on this node; 0 means no limit.
    pub max_sessions_per_user: usize,
    /// Longest `{hi ua}` in bytes.
    pub max_user_agent: usize,
    /// Largest `public` or `private` JSON value in bytes, as serialised.
    pub max_desc_bytes: usize,
    /// `/v1/im/` requests per second per user on average (0 disables the limit), and the burst.
    pub api_rate_per_second: u32,
    pub api_rate_burst: u32,
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
    /// How long a reply may wait for room in its session's queue before the session is closed instead.
    pub send_deadline: Duration,
    /// Bytes queued per session before fanout drops for it; a reply beyond it closes the session.
    pub session_queue_bytes: usize,
    /// Longest accepted `client_mid`, in bytes.
    pub max_client_mid: usize,
    /// A new login with the same `platf` (from `{hi}`) closes the user's older sessions of that platform.
    pub evict_same_platform: bool,
    /// Remote events queued for this node before the bus receiver starts dropping them.
    pub bus_queue: usize,
    /// Most topics kept loaded (their ordering lock, seq floor and caches); beyond it the least recently used
    /// that nobody is using are unloaded.
    pub max_loaded_topics: usize,
    /// A loaded topic unused for this long is unloaded.
    pub topic_idle: Duration,
    /// Publishes one session may have waiting for their commit at once (at least 1).
    pub max_publishes_in_flight: usize,
    /// Abuse reports one user may file in an hour; 0 means no limit.
    pub max_reports_per_hour: usize,
    /// Entries one tenant's outbox may hold before new audit and summary records are refused (0: unbounded).
    pub outbox_max_depth: u64,
    /// Offline push (`[push]`).
    pub push: backbone::push::PushConfig,
    /// Events for the listening plugins (`[plugins.events]`).
    pub events: backbone::events::EventConfig,
    /// One-to-one calls (`[calls]`).
    pub calls: usecases::calls::CallConfig,
    /// Uploads and downloads (`[files]`).
    pub files: usecases::files::FilesConfig,
    /// How long a sender may edit or recall a message (`[messages]`).
    pub edits: usecases::edits::EditConfig,
    /// The keys app backends sign `jwt`-scheme login tokens with (`[auth.jwt]`); none: the scheme is off.
    pub jwt: Arc<jwt::JwtKeys>,
    /// What a deleted account's profile becomes (`accounts.delete_mode`).
    pub delete_mode: DeleteMode,
    /// Credentials, their codes and the methods required to log in (`[accounts.credentials]`).
    pub credentials: usecases::credentials::CredentialsConfig,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            node_id: "local".into(),
            token_ttl: Duration::from_secs(14 * 24 * 3600),
            hash_cost: HashCost::default(),
            hash_concurrency: 0,
            login_limits: LoginLimits::default(),
            password_change_requires_current: true,
            max_groups_per_user: 1000,
            max_sessions_per_user: 64,
            max_user_agent: 256,
            max_desc_bytes: 16 * 1024,
            api_rate_per_second: 20,
            api_rate_burst: 60,
            max_message_size: 256 * 1024,
            max_subscriber_count: 4096,
            min_tag_length: 2,
            max_tag_length: 96,
            max_tag_count: 16,
            default_page: 32,
            max_page: 100,
            session_queue: 512,
            send_deadline: Duration::from_secs(10),
            session_queue_bytes: 8 * 1024 * 1024,
            max_client_mid: 64,
            evict_same_platform: false,
            bus_queue: 65_536,
            max_loaded_topics: 100_000,
            max_publishes_in_flight: 32,
            topic_idle: Duration::from_secs(600),
            max_reports_per_hour: 20,
            outbox_max_depth: 100_000,
            push: backbone::push::PushConfig::default(),
            events: backbone::events::EventConfig::default(),
            calls: usecases::calls::CallConfig::default(),
            files: usecases::files::FilesConfig::default(),
            edits: usecases::edits::EditConfig::default(),
            jwt: Arc::default(),
            delete_mode: DeleteMode::default(),
            credentials: usecases::credentials::CredentialsConfig::default(),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) ports: Ports,
    pub(crate) hub: Hub,
    pub(crate) cfg: ServiceConfig,
    pub(crate) signer: TokenSigner,
    pub(crate) topics: LoadedTopics,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) hasher: HashPool,
    pub(crate) logins: throttle::LoginThrottle,
    pub(crate) api_limiter: throttle::ApiLimiter,
    /// Outbox depths, the relay's wake-up and the queue-side counters.
    pub(crate) backbone: Arc<Backbone>,
    /// The push tasks' buffer and the push counters.
    pub(crate) push: Arc<backbone::push::PushState>,
    /// The plugin events' buffer and counters.
    pub(crate) events: Arc<backbone::events::EventState>,
    /// Each loaded tenant's push settings and providers.
    pub(crate) push_tenants: Arc<backbone::push::TenantPushes>,
    /// The calls this node's sessions are parties of, and the call counters.
    pub(crate) calls: Arc<usecases::calls::Calls>,
    /// Uploads streaming through this node (`files.max_concurrent_uploads` permits).
    pub(crate) uploads: Arc<tokio::sync::Semaphore>,
    /// The node's one metrics registry: the service's own, the backbone's, and every component's the server
    /// adds (plugins, Redis, the queue).
    registry: parking_lot::Mutex<palaver_core::Registry>,
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
        let hasher = HashPool::new(cfg.hash_concurrency, cfg.hash_cost);
        let logins = throttle::LoginThrottle::new(cfg.login_limits);
        let api_limiter = throttle::ApiLimiter::new(cfg.api_rate_per_second, cfg.api_rate_burst);
        let topics = LoadedTopics::new(cfg.max_loaded_topics, cfg.topic_idle.as_millis() as i64);
        let backbone = Arc::new(Backbone::new(cfg.outbox_max_depth));
        let (push, push_rx) = backbone::push::buffer(&cfg.push);
        let (events, event_rx) = backbone::events::buffer(&cfg.events);
        let push_tenants = Arc::new(backbone::push::TenantPushes::new(&cfg.push, ports.settings.clone()));
        let metrics = Arc::new(Metrics::default());
        let mut registry = palaver_core::Registry::default();
        palaver_core::MetricsSource::register(metrics.as_ref(), &mut registry);
        palaver_core::MetricsSource::register(backbone.as_ref(), &mut registry);
        palaver_core::MetricsSource::register(push.as_ref(), &mut registry);
        palaver_core::MetricsSource::register(events.as_ref(), &mut registry);
        let calls = Arc::new(usecases::calls::Calls::new());
        let uploads = Arc::new(tokio::sync::Semaphore::new(cfg.files.max_concurrent_uploads.max(1)));
        palaver_core::MetricsSource::register(calls.as_ref(), &mut registry);
        let svc = Service {
            inner: Arc::new(Inner {
                ports,
                hub: Hub::default(),
                cfg,
                signer,
                topics,
                metrics,
                hasher,
                logins,
                api_limiter,
                backbone,
                push,
                events,
                push_tenants,
                calls,
                uploads,
                registry: parking_lot::Mutex::new(registry),
                next_sid: AtomicU64::new(seed << 24),
                draining: AtomicBool::new(false),
                closing: std::sync::atomic::AtomicUsize::new(0),
            }),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            let hasher = svc.inner.hasher.clone();
            tokio::spawn(async move { hasher.warm().await });
            tokio::spawn(sweep_topics(Arc::downgrade(&svc.inner)));
            tokio::spawn(backbone::lane::drain(Arc::downgrade(&svc.inner), push_rx, |i| &i.push.lane, "push tasks"));
            tokio::spawn(backbone::lane::drain(
                Arc::downgrade(&svc.inner),
                event_rx,
                |i| &i.events.lane,
                "plugin events",
            ));
        }
        if svc.inner.ports.bus.is_shared() {
            if tokio::runtime::Handle::try_current().is_ok() {
                delivery::dispatch::start(&svc.inner, svc.inner.cfg.bus_queue);
                svc.inner.hub.track_attach_changes();
                tokio::spawn(delivery::attached::sync(Arc::downgrade(&svc.inner)));
            } else {
                tracing::error!("a shared bus needs a runtime to start its receiver; remote events are ignored");
            }
        }
        svc
    }

    /// Opens a session for a new connection of `tenant`. The receiver yields what to write to the client.
    pub fn open_session(&self, tenant: TenantId, transport: Transport, remote: Option<String>) -> (Session, SessionRx) {
        let sid = SessionId(self.inner.next_sid.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = delivery::hub::queue(self.inner.cfg.session_queue.max(8), self.inner.cfg.session_queue_bytes);
        let metrics = self.inner.metrics.clone();
        let handle = Arc::new(SessionHandle::new(sid, tenant, tx, metrics, self.inner.cfg.send_deadline));
        let live = self.inner.metrics.session_opened(match transport {
            Transport::WebSocket => "ws",
            Transport::LongPoll => "lp",
        });
        self.inner.hub.register(handle.clone());
        (Session::new(self.inner.clone(), handle, transport, remote, live), rx)
    }

    /// How many topics this node has loaded (see `limits.max_loaded_topics`).
    pub fn loaded_topics(&self) -> usize {
        self.inner.topics.len()
    }

    /// The plugin-event path's counters.
    pub fn event_state(&self) -> Arc<backbone::events::EventState> {
        self.inner.events.clone()
    }

    /// The push path's counters.
    pub fn push_state(&self) -> Arc<backbone::push::PushState> {
        self.inner.push.clone()
    }

    /// This node's hub.
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// The node's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The OpenMetrics text exposition of the node's registry (see [`METRICS_CONTENT_TYPE`]).
    pub fn render_metrics(&self) -> String {
        self.inner.metrics.set_loaded_topics(self.inner.topics.len());
        self.inner.metrics.set_sessions(self.inner.hub.session_count());
        let mut out = String::with_capacity(16 * 1024);
        let registry = self.inner.registry.lock();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            // Only a collector's own formatting error gets here; a partial page would mislead the scraper.
            tracing::error!(error = %e, "metrics encoding failed");
            out.clear();
        }
        out
    }

    /// Adds a component's metrics to the node's registry; the server registers the plugin runtime's, the
    /// Redis adapters' and the queue's here.
    pub fn add_metrics_source(&self, source: &dyn palaver_core::MetricsSource) {
        source.register(&mut self.inner.registry.lock());
    }

    /// The service's settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.inner.cfg
    }

    /// Releases (`Pass`) or rejects (`Reject`) a message held for review, by its stored topic name. Releasing
    /// delivers it to every attached reader, as if just published, and it joins everyone's history; a rejected
    /// message stays visible to its sender only. A rejected message may still be released later.
    ///
    /// `TopicNotFound` or `NotFound` for an unknown topic or seq, `NotAllowed` for a message that is not held
    /// (it passed, so it was delivered already), `Malformed` when asked to hold (`Pending`).
    pub async fn set_message_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: palaver_core::Seq,
        audit: palaver_core::AuditStatus,
    ) -> ServiceResult<()> {
        self.inner.messages(tenant).review(topic, seq, audit).await
    }

    /// Delivers a business event (from a plugin) to its sessions on every node, in the business `{info}` form: to
    /// every session of a user as `{info topic:"me", what:"im"}`, or to the sessions attached to a topic as
    /// `{info topic:<topic>, what:"group"}`. Returns how many sessions of this node it was queued to.
    pub fn emit_event(&self, tenant: TenantId, target: EventTarget, event: &str, payload: serde_json::Value) -> usize {
        let to = match target {
            EventTarget::User(u) => delivery::event::BusinessTarget::User(u),
            EventTarget::Topic(t) => delivery::event::BusinessTarget::Topic(t),
        };
        self.inner.emit_business(tenant, to, event, &payload, None)
    }

    /// The user a login token belongs to in `tenant`, checked as `{login scheme:"token"}` checks it: signature,
    /// expiry, tenant, the account's current `auth_version` and state. Used by the HTTP API.
    pub async fn authenticate_token(&self, tenant: TenantId, token: &str) -> ServiceResult<palaver_core::UserId> {
        let user = self.inner.accounts(tenant).user_of_token(token).await?;
        if user.state != palaver_core::RecordState::Active {
            return Err(ServiceError::AuthFailed);
        }
        Ok(user.id)
    }

    /// Stores an upload of `user` (`/v0/file/u/`) streaming from `body`; see [`usecases::files`] for the checks.
    pub async fn upload_file(
        &self,
        tenant: TenantId,
        user: palaver_core::UserId,
        meta: UploadMeta,
        body: palaver_core::ports::ByteStream,
    ) -> ServiceResult<palaver_core::ports::FileRecord> {
        self.inner.files(tenant).upload(user, meta, body).await
    }

    /// Opens a file `user` may read (`/v0/file/s/<id>.<ext>`), whole or a range of it.
    pub async fn open_file(
        &self,
        tenant: TenantId,
        user: palaver_core::UserId,
        id: &str,
        range: Option<ByteRange>,
    ) -> ServiceResult<Download> {
        self.inner.files(tenant).open(user, id, range).await
    }

    /// The account rules in force for `tenant` and its own settings (`GET /v1/admin/tenants/{t}/accounts`).
    pub async fn account_settings(
        &self,
        tenant: TenantId,
    ) -> ServiceResult<palaver_api::bodies::admin::TenantAccounts> {
        self.inner.accounts(tenant).settings().await
    }

    /// Changes `tenant`'s own account rules (`PUT /v1/admin/tenants/{t}/accounts`): a field given replaces the
    /// stored one, `null` restores the default.
    pub async fn set_account_settings(
        &self,
        tenant: TenantId,
        change: &serde_json::Value,
    ) -> ServiceResult<palaver_api::bodies::admin::TenantAccounts> {
        self.inner.accounts(tenant).set_settings(change).await
    }

    /// The file limits in force for `tenant` and its own settings (`GET /v1/admin/tenants/{t}/files`).
    pub async fn file_settings(&self, tenant: TenantId) -> ServiceResult<palaver_api::bodies::admin::TenantFiles> {
        self.inner.files(tenant).settings().await
    }

    /// Changes `tenant`'s own file limits (`PUT /v1/admin/tenants/{t}/files`): a field given replaces the stored
    /// one, `null` restores the node's.
    pub async fn set_file_settings(
        &self,
        tenant: TenantId,
        change: &serde_json::Value,
    ) -> ServiceResult<palaver_api::bodies::admin::TenantFiles> {
        self.inner.files(tenant).set_settings(change).await
    }

    /// Removes up to `limit` of the tenant's uploads that nothing referenced within the grace period; returns
    /// how many. The server runs it periodically for every tenant.
    pub async fn collect_files(&self, tenant: TenantId, limit: usize) -> ServiceResult<usize> {
        self.inner.files(tenant).collect(limit).await
    }

    /// The password hashing pool (its size and how many verifications it did).
    pub fn hasher(&self) -> &HashPool {
        &self.inner.hasher
    }

    /// Counts one business-API request of `user`; a user over `api_rate_per_second` gets
    /// [`ServiceError::RateLimited`] with the wait.
    pub fn check_api_rate(&self, tenant: TenantId, user: palaver_core::UserId) -> ServiceResult<()> {
        self.inner.api_limiter.check(tenant, user).map_err(|retry_after_ms| ServiceError::RateLimited {
            why: "business API request rate".into(),
            retry_after_ms,
        })
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
                self.inner.presence(s.tenant).release(user, &s.sid.to_string(), now).await;
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
        let frame = render::ctrl_frame(None, None, palaver_proto::Code::ServerShutdown, None, now, None);
        for s in self.inner.hub.all_sessions() {
            s.push(frame.clone());
            s.close();
        }
    }
}

/// Unloads idle topics every quarter of the idle time (at most every minute), until the service is dropped.
async fn sweep_topics(inner: std::sync::Weak<Inner>) {
    let every = match inner.upgrade() {
        Some(i) => Duration::from_millis((i.topics.idle_ms() / 4).clamp(1_000, 60_000) as u64),
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        inner.topics.sweep();
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

pub(crate) use palaver_core::now_millis;
