//! The one typed configuration: defaults < TOML file < `PALAVER_*` environment < command line, validated once
//! at start and then handed down by value.
//!
//! Environment variables name a key by its TOML path with `__` between levels, e.g.
//! `PALAVER_SERVER__LISTEN=0.0.0.0:6060` or `PALAVER_LIMITS__MAX_MESSAGE_SIZE=65536`.

use palaver_queue_kafka::KafkaConfig;
use palaver_store_redis::RedisConfig;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Everything the node can be told.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub store: StoreConfig,
    pub store_config: StoreServices,
    pub api: ApiConfig,
    pub auth: AuthConfig,
    pub limits: LimitsConfig,
    pub transport: TransportConfig,
    pub plugins: PluginsConfig,
    pub admin: AdminConfig,
    pub log: LogConfig,
    /// The task queue on Kafka (`[kafka]`; its fields are documented on the adapter's struct). Absent: the
    /// embedded queue in a SQLite file of its own (`queue.db` in the data directory).
    pub kafka: Option<KafkaConfig>,
    pub outbox: OutboxConfig,
    pub admin_commands: AdminCommandsConfig,
    pub push: crate::push::PushConfig,
    /// One-to-one call signalling (`[calls]`).
    pub calls: palaver_service::CallConfig,
    /// Uploads, downloads and where their bytes live (`[files]`).
    pub files: crate::files::FilesSection,
    /// Editing and recalling sent messages (`[messages]`).
    pub messages: MessagesConfig,
    /// The account lifecycle (`[accounts]`).
    pub accounts: AccountsConfig,
}

/// `[accounts]`: what deleting an account keeps, and the credentials accounts confirm.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AccountsConfig {
    /// What a deleted account's profile (public, trusted, tags) becomes: `client` (the request's `hard`
    /// erases it, a soft deletion keeps it), `retain` (always kept for audit) or `erase` (always cleared).
    pub delete_mode: DeleteModeConfig,
    /// Email addresses and phone numbers confirmed by code (`[accounts.credentials]`).
    pub credentials: crate::credentials::CredentialsSection,
}

/// The words of `accounts.delete_mode`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeleteModeConfig {
    #[default]
    Client,
    Retain,
    Erase,
}

impl DeleteModeConfig {
    /// The service's setting.
    pub fn service(self) -> palaver_service::DeleteMode {
        match self {
            DeleteModeConfig::Client => palaver_service::DeleteMode::Client,
            DeleteModeConfig::Retain => palaver_service::DeleteMode::Retain,
            DeleteModeConfig::Erase => palaver_service::DeleteMode::Erase,
        }
    }
}

/// `[messages]`: how long a sender may change their mind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MessagesConfig {
    /// How long after sending its sender may edit a message (`{pub head:{replace}}`), in milliseconds; 0: never.
    pub edit_window_ms: u64,
    /// How long after sending its sender may recall a message for everyone (`{del hard:true}` without D), in
    /// milliseconds; 0: never.
    pub recall_window_ms: u64,
}

impl Default for MessagesConfig {
    fn default() -> Self {
        let d = palaver_service::EditConfig::default();
        MessagesConfig {
            edit_window_ms: d.edit_window.as_millis() as u64,
            recall_window_ms: d.recall_window.as_millis() as u64,
        }
    }
}

/// The admin command consumer (`im.admin.command`, in group `kafka.group_id`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AdminCommandsConfig {
    /// Attempts at a command hit by transient failures (storage or the tenant registry down) before it goes to
    /// the dead-letter topic with a `failed` result; until then its offset is not committed.
    pub max_attempts: u32,
    /// The first retry's delay in milliseconds, doubled on each further one up to `retry_backoff_max_ms`.
    pub retry_backoff_ms: u64,
    pub retry_backoff_max_ms: u64,
}

impl Default for AdminCommandsConfig {
    fn default() -> Self {
        AdminCommandsConfig { max_attempts: 5, retry_backoff_ms: 200, retry_backoff_max_ms: 10_000 }
    }
}

/// The outbox and its relay to the task queue.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OutboxConfig {
    /// Entries one tenant's outbox may hold (the queue down, they pile up); beyond it new audit and summary
    /// records are refused with a warning. 0: unbounded.
    pub max_depth: u64,
    /// Entries the relay reads and produces per batch.
    pub relay_batch: usize,
    /// How often the relay looks at every tenant's outbox when this node wrote nothing, in milliseconds.
    pub relay_interval_ms: u64,
    /// The longest wait between the relay's retries while the queue refuses, in milliseconds.
    pub relay_backoff_max_ms: u64,
    /// How long a node's claim to relay a tenant lasts without renewal, in milliseconds; another node sharing the
    /// tenant's database takes over after it. Must exceed `kafka.delivery_timeout_ms`.
    pub lease_ms: u64,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        OutboxConfig {
            max_depth: 100_000,
            relay_batch: 500,
            relay_interval_ms: 1000,
            relay_backoff_max_ms: 5000,
            lease_ms: 30_000,
        }
    }
}

/// Where the node listens and keeps its files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// The HTTP/WebSocket listen address.
    pub listen: String,
    /// The data directory: the SQLite database and the generated token key live here.
    pub data_dir: PathBuf,
    /// This node's id, unique among live nodes. Empty: `IM_NODE_ID`, else `HOSTNAME`, else `local`.
    pub node_id: String,
    /// How long draining waits for sessions to flush their last frames, in milliseconds.
    pub drain_grace_ms: u64,
    /// With Redis: how often the node renews its id claim, refreshes the presence of its sessions and checks
    /// them against session-control versions (so a control lost on the bus takes effect within this time).
    /// Must be under half of `redis.node_ttl_seconds` and of `redis.presence_ttl_seconds`, so that one late
    /// beat does not let the claim or the presence lapse.
    pub heartbeat_ms: u64,
    /// Most client connections open at once on `listen` (HTTP and WebSocket alike); a connection beyond it is
    /// answered HTTP 503 and closed. Keep it below the process's descriptor limit (`ulimit -n`).
    pub max_connections: usize,
    /// A separate address (e.g. `127.0.0.1:9090`) that serves `/metrics` alone; `listen` then answers 404
    /// for it. Empty: `/metrics` is served on `listen`.
    pub metrics_listen: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:6060".into(),
            data_dir: PathBuf::from("./data"),
            node_id: String::new(),
            drain_grace_ms: 1500,
            heartbeat_ms: 5_000,
            max_connections: 50_000,
            metrics_listen: String::new(),
        }
    }
}

/// Which storage backs users, topics, subscriptions and messages.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// One SQLite file in the data directory: the embedded default.
    #[default]
    Sqlite,
    /// MariaDB/MySQL: a control database plus one database per tenant.
    Mysql,
}

/// The storage backend.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    pub kind: StoreKind,
    /// For `mysql`: the control database, e.g. `mysql://user:pass@127.0.0.1:3306/palaver_control`.
    pub url: String,
    /// Most connections in one tenant's pool.
    pub max_connections_per_tenant: u32,
    /// Most connections to the control database.
    pub control_max_connections: u32,
    /// Most tenant pools open at once; the least recently used idle one is closed beyond it.
    pub max_open_tenant_pools: usize,
    /// A tenant pool unused for this long is closed, in seconds.
    pub idle_pool_timeout_seconds: u64,
    /// How long a request waits for a connection, in milliseconds.
    pub acquire_timeout_ms: u64,
    /// Most messages written in one batch insert.
    pub batch_max_rows: usize,
    /// Tenant databases are named this prefix followed by the tenant's code.
    pub tenant_database_prefix: String,
    /// How long the batch writer waits to fill a batch, in milliseconds. 0 (the default) writes at once what is
    /// queued: while one batch commits the next fills by itself, and a lone writer pays no wait.
    pub batch_max_delay_ms: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            kind: StoreKind::Sqlite,
            url: String::new(),
            max_connections_per_tenant: 8,
            control_max_connections: 4,
            max_open_tenant_pools: 64,
            idle_pool_timeout_seconds: 300,
            acquire_timeout_ms: 3000,
            batch_max_rows: 200,
            batch_max_delay_ms: 0,
            tenant_database_prefix: "palaver_t_".into(),
        }
    }
}

/// Shared services beside the store (`[store_config.redis]`). Absent: the node keeps single-node behaviour.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StoreServices {
    /// Redis, with the documented keys and TTLs; its fields are documented on the adapter's struct.
    pub redis: Option<RedisConfig>,
}

/// API keys.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// The salt API keys are signed with (standard base64). The default is Tinode's, so the demo key works.
    pub key_salt: String,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig { key_salt: palaver_gateway::apikey::DEMO_SALT.into() }
    }
}

/// Tokens and password hashing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// The HMAC key for login tokens (standard base64, at least 32 bytes). Empty: generated on first start
    /// and kept in `<data_dir>/token.key`, so tokens survive restarts.
    pub token_key: String,
    /// How long a login token stays valid, in seconds.
    pub token_ttl_seconds: u64,
    /// Argon2id memory cost in KiB.
    pub argon2_memory_kib: u32,
    /// Argon2id passes.
    pub argon2_iterations: u32,
    /// A new login with the same platform (`platf` in `{hi}`) closes the user's older sessions of it.
    pub evict_same_platform: bool,
    /// Argon2 hashes and verifications running at once on this node; the rest wait for a slot, so parallel
    /// sign-ups cannot take `argon2_memory_kib` each without bound. 0: one per core.
    pub hash_concurrency: usize,
    /// Failed basic logins of one login before it backs off (1 s, doubling with each further failure up to
    /// `login_backoff_max_ms`), answered `{ctrl 429 params.retry_after_ms}`. Logins that do not exist count
    /// the same way. 0 disables the throttle. With Redis the nodes share the counters
    /// (`{prefix}:{tenant}:security:login_fail:<sha256>`); without it, or while it is down, each node counts in
    /// process (at most 65,536 logins and addresses, the least recently failed forgotten first).
    pub login_fail_limit: u32,
    /// The same for one client address (IPv6 by its /64), whatever login it tries; higher, since many users
    /// can share an address.
    pub login_ip_fail_limit: u32,
    /// The longest login backoff, in milliseconds.
    pub login_backoff_max_ms: u64,
    /// A password change (`{acc user:"me" scheme:"basic" secret:…}`) must also carry the current password as
    /// `tmpscheme:"basic"`, `tmpsecret: base64("login:current")`; without it `{ctrl 403}`, with a wrong one 401.
    /// Keeps a stolen session from locking the owner out. Tinode itself does not ask.
    pub password_change_requires_current: bool,
    /// Login tokens app backends sign themselves (`{login scheme:"jwt"}`), per tenant.
    pub jwt: crate::jwt_keys::JwtConfig,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            token_key: String::new(),
            token_ttl_seconds: 14 * 24 * 3600,
            argon2_memory_kib: 19_456,
            argon2_iterations: 2,
            evict_same_platform: false,
            hash_concurrency: 0,
            login_fail_limit: 5,
            login_ip_fail_limit: 50,
            login_backoff_max_ms: 300_000,
            password_change_requires_current: true,
            jwt: crate::jwt_keys::JwtConfig::default(),
        }
    }
}

/// Limits on what clients may send.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest client message in bytes (advertised as `maxMessageSize`).
    pub max_message_size: usize,
    /// Messages per second per session on average; 0 disables the limit.
    pub rate_per_second: f64,
    /// Messages per session in a burst.
    pub rate_burst: u32,
    /// Most subscribers of one group.
    pub max_subscriber_count: usize,
    /// Frames queued per session before fanout drops for it.
    pub session_queue: usize,
    /// Most long-polling sessions on the node; creations beyond it answer 503.
    pub max_lp_sessions: usize,
    /// Most long-polling sessions one client address (IPv6: one /64) may hold; creations beyond it answer 429.
    /// Sized for many clients behind one NAT: it stops one host from taking the node's whole budget, not a
    /// household from polling.
    pub max_lp_sessions_per_ip: usize,
    /// Bytes queued per session before fanout drops for it; a reply that would go beyond it closes the session
    /// (its client is not reading). Bounds what one slow reader costs, however large its frames.
    pub session_queue_bytes: usize,
    /// Groups one user may belong to, however they join (create, `{sub}`, an invite, `/v1/im/` invites and
    /// approved requests); beyond it `{ctrl 422 "too many groups"}` or HTTP 409 `TOO_MANY_GROUPS`. 0: no limit.
    pub max_groups_per_user: usize,
    /// Sessions one user may have logged in on a node; beyond it a login answers `{ctrl 422 "too many
    /// sessions"}`. 0: no limit.
    pub max_sessions_per_user: usize,
    /// Most topics a node keeps loaded (each topic's ordering lock, seq floor and caches); beyond it the least
    /// recently used that nobody is using are unloaded, to be reloaded from the store when next used.
    pub max_loaded_topics: usize,
    /// A loaded topic unused for this long is unloaded, in seconds.
    pub topic_idle_seconds: u64,
    /// Publishes one session may have waiting for their commit at once: a session reads its next frame while
    /// earlier messages commit, and beyond this many it stops reading until one settles. At least 1.
    pub max_publishes_in_flight: usize,
    /// Longest `{hi ua}` (user agent) in bytes; longer ones get ctrl 413.
    pub max_user_agent_bytes: usize,
    /// Largest `public`, `private` or `trusted` JSON value of a user, topic or subscription, in bytes as
    /// serialised; larger ones get ctrl 413.
    pub max_desc_bytes: usize,
    /// `/v1/im/` requests per second per user on average (counted per node); beyond it HTTP 429
    /// `RATE_LIMITED` with `Retry-After`. 0 disables the limit.
    pub api_rate_per_second: u32,
    /// `/v1/im/` requests per user in a burst.
    pub api_rate_burst: u32,
    /// Abuse reports (`POST /v1/im/reports`) one user may file in an hour; beyond it HTTP 429 `REPORT_LIMIT`.
    /// 0: no limit.
    pub max_reports_per_hour: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_message_size: 256 * 1024,
            rate_per_second: 50.0,
            rate_burst: 200,
            max_subscriber_count: 4096,
            session_queue: 512,
            max_lp_sessions: 10_000,
            max_lp_sessions_per_ip: 1000,
            session_queue_bytes: 8 * 1024 * 1024,
            max_groups_per_user: 1000,
            max_sessions_per_user: 64,
            max_loaded_topics: 100_000,
            topic_idle_seconds: 600,
            max_publishes_in_flight: 32,
            max_user_agent_bytes: 256,
            max_desc_bytes: 16 * 1024,
            api_rate_per_second: 20,
            api_rate_burst: 60,
            max_reports_per_hour: 20,
        }
    }
}

/// WebSocket and long-polling settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    /// WebSocket read buffer per connection, in bytes; small buffers keep idle connections cheap.
    pub ws_read_buffer: usize,
    /// WebSocket write buffer per connection, in bytes.
    pub ws_write_buffer: usize,
    /// A WebSocket that sends nothing (not even a pong) for this long is closed, in seconds.
    pub idle_timeout_seconds: u64,
    /// How often the server pings a WebSocket client, in seconds.
    pub ping_interval_seconds: u64,
    /// How long a long poll waits for a message before answering empty, in seconds.
    pub lp_poll_timeout_seconds: u64,
    /// A long-polling session that has not polled for this long is closed.
    pub lp_session_timeout_seconds: u64,
    /// How long a reply to a client's own request may wait for room in its session queue, in milliseconds;
    /// past it the session is closed (its client stopped reading) instead of holding its request forever.
    pub send_deadline_ms: u64,
    /// A client must send a request's headers within this long, in milliseconds; the same limit applies while
    /// a keep-alive connection waits for its next request.
    pub header_timeout_ms: u64,
    /// An HTTP connection on which no byte moves either way for this long is closed, in milliseconds (a
    /// stalled request body, a response nobody reads). Must exceed `lp_poll_timeout_seconds`.
    pub http_idle_timeout_ms: u64,
    /// The WebSocket upgrade must complete and the client's first frame arrive within this long after the
    /// upgrade request, in milliseconds.
    pub ws_handshake_timeout_ms: u64,
    /// A WebSocket write or flush that takes longer than this disconnects the client, in milliseconds: it
    /// stopped reading.
    pub write_timeout_ms: u64,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            ws_read_buffer: 1024,
            ws_write_buffer: 0,
            idle_timeout_seconds: 55,
            ping_interval_seconds: 25,
            lp_poll_timeout_seconds: 25,
            lp_session_timeout_seconds: 60,
            send_deadline_ms: 10_000,
            header_timeout_ms: 10_000,
            http_idle_timeout_ms: 90_000,
            ws_handshake_timeout_ms: 10_000,
            write_timeout_ms: 10_000,
        }
    }
}

/// WebAssembly plugins.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// The plugins directory (components with their manifests, e.g. `target/plugins`). Empty: no plugins.
    pub dir: PathBuf,
    /// Where compiled components are cached. Empty: `<data_dir>/plugin-cache`.
    pub cache_dir: PathBuf,
    /// Reload plugins whose files change in the directory.
    pub watch: bool,
    /// How often the directory is checked for changes, in milliseconds.
    pub watch_interval_ms: u64,
    /// The most keys one plugin may keep in its key-value store for one tenant; a write past it fails with the
    /// `kv` import's `limit` error.
    pub kv_max_keys: u64,
    /// The most bytes (keys and values added up) one plugin may keep in its key-value store for one tenant.
    pub kv_max_bytes: u64,
    /// The largest plugin upload (`POST /v1/admin/plugins`, the whole form), in bytes.
    pub max_upload_bytes: usize,
    /// Keys whose ed25519 signature an upload must carry, by key id: base64 of the 32-byte public key. Empty:
    /// uploads need no signature (a signed one is still checked against none and refused).
    pub trusted_keys: std::collections::BTreeMap<String, String>,
    /// Delivering stored messages and account changes to the listening plugins.
    pub events: PluginEventsConfig,
}

/// The plugin-event path (`[plugins.events]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PluginEventsConfig {
    /// Message events waiting between the publish path and the outbox (or the embedded queue); beyond it new ones
    /// are dropped and counted (`palaver_listener_events_dropped_total`).
    pub buffer: usize,
    /// Deliveries of an event to a failing listener before it goes to the dead-letter topic.
    pub max_attempts: u32,
    /// The first wait before delivering again, in milliseconds; it doubles up to `retry_backoff_max_ms`.
    pub retry_backoff_ms: u64,
    pub retry_backoff_max_ms: u64,
}

impl Default for PluginEventsConfig {
    fn default() -> Self {
        PluginEventsConfig { buffer: 10_000, max_attempts: 5, retry_backoff_ms: 200, retry_backoff_max_ms: 5_000 }
    }
}

impl PluginEventsConfig {
    /// The service's side of it.
    pub fn service(&self) -> palaver_service::backbone::events::EventConfig {
        palaver_service::backbone::events::EventConfig {
            buffer: self.buffer,
            max_attempts: self.max_attempts,
            backoff_initial: std::time::Duration::from_millis(self.retry_backoff_ms),
            backoff_max: std::time::Duration::from_millis(self.retry_backoff_max_ms),
        }
    }
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            dir: PathBuf::new(),
            cache_dir: PathBuf::new(),
            watch: true,
            watch_interval_ms: 1000,
            kv_max_keys: 10_000,
            kv_max_bytes: 4 << 20,
            max_upload_bytes: 8 << 20,
            trusted_keys: std::collections::BTreeMap::new(),
            events: PluginEventsConfig::default(),
        }
    }
}

/// The admin API (`/v1/admin/…`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// The bearer token admin calls must carry. Empty: the node has no admin API.
    pub token: String,
    /// `/metrics` (on `server.listen` or `server.metrics_listen`) needs `Authorization: Bearer <token>`.
    /// Requires `token`.
    pub protect_metrics: bool,
}

/// Logging.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A `tracing` filter such as `info` or `palaver_service=debug,info`.
    pub level: String,
    /// `text` (human-readable lines) or `json` (one JSON object per line, for log collectors).
    pub format: LogFormat,
    /// Log every HTTP request at info (target `palaver::access`): method, path without its query (which may
    /// carry an API key or a token), status, duration and client address. A WebSocket is logged at its upgrade.
    pub access: bool,
    /// Export of the tracing spans to an OpenTelemetry collector; off while `log.otlp.endpoint` is empty.
    pub otlp: OtlpConfig,
}

/// OTLP/HTTP (protobuf) export of the tracing spans, batched on a thread of its own so that a slow or absent
/// collector never slows a request (a full batch queue drops spans).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP base URL, such as `http://otel-collector:4318`; spans are posted to
    /// `{endpoint}/v1/traces`. Empty: no export.
    pub endpoint: String,
    /// The `service.name` resource attribute (the node id goes in `service.instance.id`).
    pub service_name: String,
    /// The share of new traces kept, 0 to 1 (a child span follows its parent's decision).
    pub sample_ratio: f64,
    /// How long one export may take before it is abandoned.
    pub timeout_ms: u64,
    /// Extra request headers, such as a hosted collector's API key.
    pub headers: std::collections::BTreeMap<String, String>,
}

impl OtlpConfig {
    fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(format!("log.otlp.sample_ratio {} is not between 0 and 1", self.sample_ratio));
        }
        if self.endpoint.is_empty() {
            return Ok(());
        }
        if !(self.endpoint.starts_with("http://") || self.endpoint.starts_with("https://"))
            || self.endpoint.parse::<http::Uri>().is_err()
        {
            return Err(format!("log.otlp.endpoint {:?} is not an http:// or https:// URL", self.endpoint));
        }
        if self.timeout_ms == 0 {
            return Err("log.otlp.timeout_ms must be at least 1".into());
        }
        if self.service_name.is_empty() {
            return Err("log.otlp.service_name must not be empty".into());
        }
        Ok(())
    }
}

impl Default for OtlpConfig {
    fn default() -> Self {
        OtlpConfig {
            endpoint: String::new(),
            service_name: "palaver".into(),
            sample_ratio: 1.0,
            timeout_ms: 10_000,
            headers: Default::default(),
        }
    }
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { level: "info".into(), format: LogFormat::Text, access: false, otlp: OtlpConfig::default() }
    }
}

/// The top-level sections of [`Config`], so that `PALAVER_LIMITS_RATE` (one underscore) is refused as a typo
/// while variables of other tools that share the prefix are left alone.
const SECTIONS: &[&str] = &[
    "server",
    "store",
    "store_config",
    "api",
    "auth",
    "limits",
    "transport",
    "plugins",
    "admin",
    "log",
    "kafka",
    "outbox",
    "admin_commands",
    "push",
    "calls",
    "files",
    "messages",
    "accounts",
];

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: String, source: Box<toml::de::Error> },
    #[error("environment variable {name}: {why}")]
    Env { name: String, why: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// What the command line may override.
#[derive(Debug, Clone, Default)]
pub struct CliOverrides {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub node_id: Option<String>,
}

impl Config {
    /// Loads defaults, then the file (if any), then `PALAVER_*` variables from `env`, then the CLI.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        cli: &CliOverrides,
    ) -> Result<Config, ConfigError> {
        let mut table = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
                text.parse::<toml::Table>()
                    .map_err(|e| ConfigError::Parse { path: path.display().to_string(), source: Box::new(e) })?
            }
            None => toml::Table::new(),
        };
        // Shallower variables first, so that PALAVER_A__B__C refines a whole table given as PALAVER_A__B
        // whatever order the environment lists them in.
        let mut vars: Vec<(String, Vec<String>, String)> = Vec::new();
        for (name, value) in env {
            let Some(rest) = name.strip_prefix("PALAVER_") else { continue };
            if rest == "LOG" {
                // PALAVER_LOG is the tracing filter (read when logging starts), not a configuration key.
                continue;
            }
            let path: Vec<String> = rest.split("__").map(|s| s.to_lowercase()).collect();
            if path.len() == 1 && !SECTIONS.iter().any(|s| path[0].starts_with(&format!("{s}_"))) {
                // One part naming no section (PALAVER_BIN, a script's own flag) is not meant for us; one
                // that starts like a section (PALAVER_LIMITS_RATE) is a key with a single underscore.
                continue;
            }
            if path.len() < 2 || path.iter().any(String::is_empty) {
                let why = "expected PALAVER_SECTION__KEY, with __ between deeper levels".into();
                return Err(ConfigError::Env { name, why });
            }
            vars.push((name, path, value));
        }
        vars.sort_by_key(|(_, path, _)| path.len());
        for (name, path, value) in vars {
            // A value that reads as TOML (a number, a boolean, a quoted string, an inline table) keeps its
            // type; anything else is taken as a plain string.
            let parsed = format!("v = {value}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or(toml::Value::String(value));
            let (key, parents) = path.split_last().expect("two or more parts");
            let mut at = &mut table;
            for part in parents {
                match at.entry(part.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new())) {
                    toml::Value::Table(t) => at = t,
                    _ => return Err(ConfigError::Env { name, why: format!("`{part}` is not a table") }),
                }
            }
            at.insert(key.clone(), parsed);
        }
        let mut cfg: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse { path: "configuration".into(), source: Box::new(e) })?;
        if let Some(l) = &cli.listen {
            cfg.server.listen = l.clone();
        }
        if let Some(d) = &cli.data_dir {
            cfg.server.data_dir = d.clone();
        }
        if let Some(n) = &cli.node_id {
            cfg.server.node_id = n.clone();
        }
        if cfg.server.node_id.is_empty() {
            cfg.server.node_id = default_node_id(|k| std::env::var(k).ok());
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every value once, so that nothing fails later for a reason that was knowable at start.
    /// Settings that are fine on one development node but unsafe on a scale-out node, each with what to do;
    /// `palaver serve` refuses to start with any of them unless given `--dev`.
    pub fn scale_out_hazards(&self) -> Vec<String> {
        let mut hazards = Vec::new();
        if self.store.kind != StoreKind::Mysql {
            return hazards;
        }
        if self.api.key_salt == palaver_gateway::apikey::DEMO_SALT {
            hazards.push(
                "api.key_salt is the Tinode demo salt, so anyone can make API keys for this server: set \
                 PALAVER_API__KEY_SALT (e.g. head -c 32 /dev/urandom | base64) and hand out keys from \
                 `palaver tenant key add`"
                    .to_owned(),
            );
        }
        if self.auth.token_key.is_empty() {
            hazards.push(
                "auth.token_key is not set, so each node signs tokens with a key of its own and a token from one \
                 node fails on another: give every node the same PALAVER_AUTH__TOKEN_KEY"
                    .to_owned(),
            );
        }
        hazards
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |s: String| Err(ConfigError::Invalid(s));
        if self.server.listen.parse::<SocketAddr>().is_err() {
            return bad(format!("server.listen {:?} is not an address like 127.0.0.1:6060", self.server.listen));
        }
        let id_ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        // Empty means "resolve at start" (IM_NODE_ID, then HOSTNAME, then `local`).
        let id = &self.server.node_id;
        if id.len() > 64 || !id.chars().all(id_ok) {
            return bad("server.node_id must be 1–64 letters, digits or -_.".into());
        }
        if self.server.heartbeat_ms < 100 {
            return bad("server.heartbeat_ms must be at least 100".into());
        }
        self.log.otlp.validate().map_err(ConfigError::Invalid)?;
        if self.server.max_connections == 0 {
            return bad("server.max_connections must be at least 1".into());
        }
        if !self.server.metrics_listen.is_empty() {
            match self.server.metrics_listen.parse::<SocketAddr>() {
                Err(_) => {
                    return bad(format!(
                        "server.metrics_listen {:?} is not an address like 127.0.0.1:9090",
                        self.server.metrics_listen
                    ));
                }
                Ok(m) if m.port() != 0 && self.server.listen.parse::<SocketAddr>().ok() == Some(m) => {
                    return bad("server.metrics_listen must differ from server.listen".into());
                }
                Ok(_) => {}
            }
        }
        if self.store.kind == StoreKind::Mysql && !self.store.url.starts_with("mysql://") {
            return bad("store.url must be a mysql:// URL when store.kind = \"mysql\"".into());
        }
        if self.store.max_connections_per_tenant == 0 || self.store.batch_max_rows == 0 {
            return bad("store.max_connections_per_tenant and store.batch_max_rows must be ≥ 1".into());
        }
        if let Some(r) = &self.store_config.redis
            && let Err(e) = r.validate()
        {
            return bad(format!("store_config.redis: {e}"));
        }
        if let Some(r) = &self.store_config.redis {
            let beat = self.server.heartbeat_ms;
            for (name, ttl) in
                [("node_ttl_seconds", r.node_ttl_seconds), ("presence_ttl_seconds", r.presence_ttl_seconds)]
            {
                if beat.saturating_mul(2) >= ttl.saturating_mul(1000) {
                    return bad(format!(
                        "server.heartbeat_ms ({beat}) must be under half of store_config.redis.{name} ({ttl} s), \
                         or what the heartbeat renews lapses between two beats"
                    ));
                }
            }
        }
        if let Some(k) = &self.kafka {
            k.validate().map_err(ConfigError::Invalid)?;
            if self.outbox.lease_ms <= k.delivery_timeout_ms {
                return bad(format!(
                    "outbox.lease_ms ({}) must exceed kafka.delivery_timeout_ms ({}), or a slow batch could be \
                     produced again by another node while it is still in flight",
                    self.outbox.lease_ms, k.delivery_timeout_ms
                ));
            }
        }
        let o = &self.outbox;
        if o.relay_batch == 0 || o.relay_batch > 10_000 || o.relay_interval_ms < 10 || o.relay_backoff_max_ms < 100 {
            return bad(
                "outbox.relay_batch must be 1–10000, outbox.relay_interval_ms ≥ 10, outbox.relay_backoff_max_ms ≥ 100"
                    .into(),
            );
        }
        if o.lease_ms < 1000 {
            return bad("outbox.lease_ms must be at least 1000".into());
        }
        if palaver_gateway::apikey::decode_salt(&self.api.key_salt).is_err() {
            return bad("api.key_salt must be standard base64".into());
        }
        if !self.auth.token_key.is_empty() && self.token_key_bytes().is_none_or(|k| k.len() < 32) {
            return bad("auth.token_key must be base64 of at least 32 bytes".into());
        }
        if self.auth.token_ttl_seconds < 60 {
            return bad("auth.token_ttl_seconds must be at least 60".into());
        }
        if let Err(e) = self.auth.jwt.load() {
            return bad(format!("{e:#}"));
        }
        if self.auth.argon2_memory_kib < 8 || self.auth.argon2_iterations < 1 {
            return bad("auth.argon2_memory_kib must be ≥ 8 and auth.argon2_iterations ≥ 1".into());
        }
        let a = &self.auth;
        if a.login_fail_limit > 0 && (a.login_ip_fail_limit < a.login_fail_limit || a.login_backoff_max_ms < 1000) {
            return bad(
                "auth.login_ip_fail_limit must be ≥ auth.login_fail_limit and auth.login_backoff_max_ms ≥ 1000".into(),
            );
        }
        if a.hash_concurrency > 1024 {
            return bad("auth.hash_concurrency must be at most 1024 (0: one per core)".into());
        }
        let l = &self.limits;
        // A value larger than max_message_size is harmless: no frame can carry it.
        if l.max_user_agent_bytes < 16 || l.max_desc_bytes < 256 {
            return bad("limits.max_user_agent_bytes must be ≥ 16 and limits.max_desc_bytes ≥ 256".into());
        }
        if l.api_rate_burst == 0 {
            return bad("limits.api_rate_burst must be ≥ 1".into());
        }
        if !(256..=64 * 1024 * 1024).contains(&l.max_message_size) {
            return bad("limits.max_message_size must be between 256 bytes and 64 MiB".into());
        }
        if l.rate_per_second < 0.0 || !l.rate_per_second.is_finite() || l.rate_burst == 0 {
            return bad("limits.rate_per_second must be ≥ 0 and limits.rate_burst ≥ 1".into());
        }
        if l.max_subscriber_count == 0 || l.session_queue < 8 {
            return bad("limits.max_subscriber_count must be ≥ 1 and limits.session_queue ≥ 8".into());
        }
        if l.session_queue_bytes < 64 * 1024 {
            return bad("limits.session_queue_bytes must be at least 65536".into());
        }
        if !self.admin.token.is_empty() && self.admin.token.len() < 16 {
            return bad("admin.token must be at least 16 characters".into());
        }
        if self.admin.protect_metrics && self.admin.token.is_empty() {
            return bad("admin.protect_metrics needs admin.token".into());
        }
        if self.plugins.watch_interval_ms < 50 {
            return bad("plugins.watch_interval_ms must be at least 50".into());
        }
        if !(64 * 1024..=16 << 20).contains(&self.plugins.max_upload_bytes) {
            return bad(
                "plugins.max_upload_bytes must be between 64 KiB and 16 MiB (what the stores keep of one component)"
                    .into(),
            );
        }
        for (id, key) in &self.plugins.trusted_keys {
            if crate::plugin_rollout::public_key(key).is_none() {
                return bad(format!("plugins.trusted_keys.{id} is not the base64 of a 32-byte ed25519 public key"));
            }
        }
        let e = &self.plugins.events;
        if !(1..=1_000_000).contains(&e.buffer) || !(1..=10).contains(&e.max_attempts) {
            return bad("plugins.events.buffer must be 1 to 1000000 and plugins.events.max_attempts 1 to 10".into());
        }
        // The worker holds its partition while it waits between attempts: all of an event's waits together stay
        // well under Kafka's poll interval (300 s), past which the broker would hand the partition to another node.
        let waits = u64::from(e.max_attempts - 1).saturating_mul(e.retry_backoff_max_ms);
        if e.retry_backoff_ms == 0 || e.retry_backoff_max_ms < e.retry_backoff_ms || waits > 120_000 {
            return bad(format!(
                "plugins.events.retry_backoff_ms must be at least 1 and at most plugins.events.retry_backoff_max_ms, \
                 and (max_attempts - 1) × retry_backoff_max_ms at most 120000 (it is {waits})"
            ));
        }
        if self.plugins.kv_max_keys == 0 || self.plugins.kv_max_bytes < 1024 {
            return bad("plugins.kv_max_keys must be at least 1 and plugins.kv_max_bytes at least 1024".into());
        }
        let t = &self.transport;
        if t.ws_read_buffer < 256 || t.idle_timeout_seconds == 0 || t.ping_interval_seconds == 0 {
            return bad("transport: ws_read_buffer ≥ 256 and non-zero timeouts are required".into());
        }
        if t.ping_interval_seconds >= t.idle_timeout_seconds {
            return bad("transport.ping_interval_seconds must be below idle_timeout_seconds".into());
        }
        if t.lp_poll_timeout_seconds == 0 || t.lp_session_timeout_seconds <= t.lp_poll_timeout_seconds {
            return bad("transport.lp_session_timeout_seconds must exceed lp_poll_timeout_seconds".into());
        }
        if t.send_deadline_ms < 100 {
            return bad("transport.send_deadline_ms must be at least 100".into());
        }
        self.push.validate().map_err(ConfigError::Invalid)?;
        self.calls.validate().map_err(ConfigError::Invalid)?;
        self.files.validate().map_err(ConfigError::Invalid)?;
        self.accounts.credentials.validate().map_err(ConfigError::Invalid)?;
        let a = &self.admin_commands;
        if a.max_attempts == 0 || a.retry_backoff_ms == 0 || a.retry_backoff_max_ms < a.retry_backoff_ms {
            return bad("admin_commands: max_attempts and retry_backoff_ms must be ≥ 1 and retry_backoff_max_ms ≥ \
                 retry_backoff_ms"
                .into());
        }
        if l.max_loaded_topics < 16 || l.topic_idle_seconds == 0 {
            return bad("limits.max_loaded_topics must be ≥ 16 and limits.topic_idle_seconds ≥ 1".into());
        }
        if l.max_publishes_in_flight == 0 || l.max_publishes_in_flight > 4096 {
            return bad("limits.max_publishes_in_flight must be 1–4096".into());
        }
        if l.max_lp_sessions == 0 || l.max_lp_sessions_per_ip == 0 {
            return bad("limits.max_lp_sessions and limits.max_lp_sessions_per_ip must be ≥ 1".into());
        }
        if t.header_timeout_ms < 100 || t.ws_handshake_timeout_ms < 100 || t.write_timeout_ms < 100 {
            return bad(
                "transport: header_timeout_ms, ws_handshake_timeout_ms and write_timeout_ms must be ≥ 100".into()
            );
        }
        if t.http_idle_timeout_ms <= t.lp_poll_timeout_seconds.saturating_mul(1000) {
            return bad("transport.http_idle_timeout_ms must exceed lp_poll_timeout_seconds (a long poll waits)".into());
        }
        Ok(())
    }

    /// The configured token key, decoded.
    pub fn token_key_bytes(&self) -> Option<Vec<u8>> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(self.auth.token_key.trim()).ok()
    }

    /// The effective configuration as TOML, with secrets redacted.
    pub fn to_redacted_toml(&self) -> String {
        let mut shown = self.clone();
        // The salt makes API keys: whoever has it can mint a key for any tenant it signs for.
        shown.api.key_salt = "<redacted>".into();
        if !shown.auth.token_key.is_empty() {
            shown.auth.token_key = "<redacted>".into();
        }
        shown.auth.jwt = shown.auth.jwt.redacted();
        shown.store.url = redact_url(&shown.store.url);
        if !shown.admin.token.is_empty() {
            shown.admin.token = "<redacted>".into();
        }
        if let Some(r) = shown.store_config.redis.as_mut() {
            *r = r.redacted();
        }
        toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# cannot render: {e}"))
    }
}

/// Hides the password of a `scheme://user:pass@host/…` URL: `scheme://user:***@host/…`. The user info ends at
/// the last `@` before the path, so a password containing `@` (or `:`) is hidden whole.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
        None => url.to_owned(),
    }
}

/// The node id when none is configured: `IM_NODE_ID`, else `HOSTNAME`, else `local`.
pub fn default_node_id(env: impl Fn(&str) -> Option<String>) -> String {
    ["IM_NODE_ID", "HOSTNAME"]
        .iter()
        .filter_map(|k| env(k))
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "local".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn kafka_section_from_file_and_env_is_validated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.toml");
        std::fs::write(&file, "[kafka]\nbrokers = \"k1:9092,k2:9092\"\n[kafka.topics]\naudit = \"acme.audit\"\n")
            .unwrap();
        let cfg =
            Config::load(Some(&file), env(&[("PALAVER_KAFKA__GROUP_ID", "im")]), &CliOverrides::default()).unwrap();
        let k = cfg.kafka.expect("the section is present");
        assert_eq!((k.brokers.as_str(), k.group_id.as_str()), ("k1:9092,k2:9092", "im"));
        assert_eq!(k.topics.audit, "acme.audit");
        assert_eq!(k.topics.admin_command, "im.admin.command", "unnamed topics keep the defaults");
        assert!(Config::load(None, env(&[]), &CliOverrides::default()).unwrap().kafka.is_none());
        let bad = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default()).unwrap_err();
        assert!(bad(&[("PALAVER_KAFKA__BROKERS", "nohost")]).to_string().contains("kafka.brokers"));
        let e = bad(&[("PALAVER_KAFKA__DELIVERY_TIMEOUT_MS", "40000")]).to_string();
        assert!(e.contains("outbox.lease_ms"), "{e}");
        assert!(bad(&[("PALAVER_OUTBOX__RELAY_BATCH", "0")]).to_string().contains("outbox.relay_batch"));
    }

    #[test]
    fn layers_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "[server]\nlisten = \"127.0.0.1:7000\"\nnode_id = \"a\"\n[limits]\nrate_burst = 5\n")
            .unwrap();
        let cfg = Config::load(
            Some(&file),
            env(&[("PALAVER_SERVER__NODE_ID", "b"), ("PALAVER_LIMITS__MAX_MESSAGE_SIZE", "4096"), ("HOME", "/x")]),
            &CliOverrides { listen: Some("127.0.0.1:7001".into()), ..Default::default() },
        )
        .unwrap();
        assert_eq!(cfg.server.listen, "127.0.0.1:7001", "CLI beats the file");
        assert_eq!(cfg.server.node_id, "b", "env beats the file");
        assert_eq!(cfg.limits.max_message_size, 4096);
        assert_eq!(cfg.limits.rate_burst, 5, "the file beats defaults");
        assert_eq!(cfg.transport.ws_read_buffer, 1024, "defaults fill the rest");
    }

    #[test]
    fn environment_reaches_any_depth_and_refines_a_whole_table() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default());
        // Deeper variables apply after shallower ones, whichever comes first in the environment.
        let cfg = load(&[
            ("PALAVER_STORE_CONFIG__REDIS__KEY_PREFIX", "deep"),
            ("PALAVER_STORE_CONFIG__REDIS", "{ addr = \"10.0.0.1:6379\", key_prefix = \"whole\" }"),
            ("PALAVER_STORE_CONFIG__REDIS__CACHE_TTL_SECONDS", "42"),
        ])
        .unwrap();
        let redis = cfg.store_config.redis.expect("redis configured");
        assert_eq!((redis.addr.as_str(), redis.key_prefix.as_str()), ("10.0.0.1:6379", "deep"));
        assert_eq!(redis.cache_ttl_seconds, 42);
        let e = load(&[("PALAVER_LOG__FORMAT__X", "1"), ("PALAVER_LOG__FORMAT", "text")]).unwrap_err();
        assert!(e.to_string().contains("`format` is not a table"), "{e}");
        assert!(load(&[("PALAVER_SERVER____LISTEN", "x")]).is_err(), "empty parts are refused");
        assert_eq!(load(&[("PALAVER_LOG__FORMAT", "json")]).unwrap().log.format, LogFormat::Json);
        assert!(load(&[("PALAVER_LOG__FORMAT", "xml")]).is_err());
    }

    #[test]
    fn scale_out_nodes_are_warned_off_the_demo_salt_and_a_missing_token_key() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default()).unwrap();
        assert!(load(&[]).scale_out_hazards().is_empty(), "the embedded default is for development");
        let mysql = [("PALAVER_STORE__KIND", "mysql"), ("PALAVER_STORE__URL", "mysql://u:p@h/c")];
        let hazards = load(&mysql).scale_out_hazards();
        assert_eq!(hazards.len(), 2, "{hazards:?}");
        assert!(hazards[0].contains("api.key_salt") && hazards[1].contains("auth.token_key"), "{hazards:?}");
        let mut safe = mysql.to_vec();
        safe.push(("PALAVER_API__KEY_SALT", "\"c2FsdC1mb3ItdGVzdHMtMDEyMzQ1Njc4OWFiY2RlZg==\""));
        safe.push(("PALAVER_AUTH__TOKEN_KEY", "\"dG9rZW4ta2V5LWZvci10ZXN0cy0wMTIzNDU2Nzg5YWI=\""));
        assert!(load(&safe).scale_out_hazards().is_empty());
    }

    #[test]
    fn the_section_list_names_every_section() {
        let cfg = Config { kafka: Some(KafkaConfig::default()), ..Config::default() };
        let table = toml::Table::try_from(&cfg).unwrap();
        let keys: Vec<&str> = table.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), SECTIONS.len(), "{keys:?} against {SECTIONS:?}");
        assert!(keys.iter().all(|k| SECTIONS.contains(k)), "{keys:?} against {SECTIONS:?}");
    }

    #[test]
    fn bad_values_are_refused_with_a_reason() {
        let e = Config::load(None, env(&[("PALAVER_SERVER__LISTEN", "nowhere")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("server.listen"));
        let e = Config::load(None, env(&[("PALAVER_LIMITS__MAX_MESSAGE_SIZE", "1")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("max_message_size"));
        let e = Config::load(None, env(&[("PALAVER_PLUGINS__KV_MAX_KEYS", "0")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("plugins.kv_max_keys"));
        let e = Config::load(None, env(&[("PALAVER_LIMITS_RATE_PER_SECOND", "1")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("PALAVER_SECTION__KEY"), "a single underscore is a typo");
        let others = [("PALAVER_BIN", "/usr/bin/x"), ("PALAVER_APT_UPDATED", "1"), ("PALAVER_NOPE", "1")];
        assert!(Config::load(None, env(&others), &CliOverrides::default()).is_ok(), "not ours: left alone");
        assert!(Config::load(None, env(&[("PALAVER_LOG", "debug")]), &CliOverrides::default()).is_ok());
        let e = Config::load(None, env(&[("PALAVER_SERVER__BOGUS", "1")]), &CliOverrides::default());
        assert!(e.is_err(), "unknown keys are refused");
    }

    #[test]
    fn listener_limits_are_checked_at_start() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default());
        let e = load(&[("PALAVER_ADMIN__PROTECT_METRICS", "true")]).unwrap_err();
        assert!(e.to_string().contains("admin.protect_metrics needs admin.token"), "{e}");
        let e = load(&[("PALAVER_SERVER__METRICS_LISTEN", "metrics")]).unwrap_err();
        assert!(e.to_string().contains("server.metrics_listen"), "{e}");
        let e = load(&[("PALAVER_SERVER__METRICS_LISTEN", "127.0.0.1:6060")]).unwrap_err();
        assert!(e.to_string().contains("must differ from server.listen"), "{e}");
        let e = load(&[("PALAVER_TRANSPORT__HTTP_IDLE_TIMEOUT_MS", "25000")]).unwrap_err();
        assert!(e.to_string().contains("http_idle_timeout_ms must exceed"), "{e}");
        assert!(load(&[("PALAVER_SERVER__MAX_CONNECTIONS", "0")]).is_err());
        assert!(load(&[("PALAVER_LIMITS__SESSION_QUEUE_BYTES", "1024")]).is_err());
        assert!(load(&[("PALAVER_TRANSPORT__WRITE_TIMEOUT_MS", "0")]).is_err());
        let ok = load(&[
            ("PALAVER_ADMIN__TOKEN", "0123456789abcdef"),
            ("PALAVER_ADMIN__PROTECT_METRICS", "true"),
            ("PALAVER_SERVER__METRICS_LISTEN", "127.0.0.1:9090"),
        ])
        .unwrap();
        assert!(ok.admin.protect_metrics);
        assert_eq!(ok.server.max_connections, 50_000);
        assert_eq!(ok.limits.session_queue_bytes, 8 * 1024 * 1024);
    }

    #[test]
    fn defaults_are_valid_and_print_without_secrets() {
        let mut cfg = Config::default();
        cfg.validate().unwrap();
        cfg.auth.token_key = "c2VjcmV0".into();
        cfg.store.url = "mysql://palaver:hunter2@db:3306/palaver_control".into();
        let shown = cfg.to_redacted_toml();
        assert!(shown.contains("<redacted>"));
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn print_hides_the_salt_the_admin_token_and_passwords_with_at_signs() {
        let mut cfg = Config::default();
        cfg.admin.token = "admin-token-0123456789".into();
        cfg.store.url = "mysql://palaver:p@ss:w@rd@db:3306/palaver_control?ssl-mode=disabled".into();
        let shown = cfg.to_redacted_toml();
        assert!(!shown.contains(palaver_gateway::apikey::DEMO_SALT), "the API key salt: {shown}");
        assert!(!shown.contains("admin-token-0123456789"), "{shown}");
        assert!(!shown.contains("ss:w") && !shown.contains("rd@db"), "{shown}");
        assert!(shown.contains("mysql://palaver:***@db:3306/palaver_control?ssl-mode=disabled"), "{shown}");
        assert_eq!(redact_url("mysql://u:p@h/db"), "mysql://u:***@h/db");
        assert_eq!(redact_url("mysql://h/db?x=a@b"), "mysql://h/db?x=a@b", "no user info, nothing hidden");
        assert_eq!(redact_url("mysql://u@h/db"), "mysql://u@h/db", "no password");
    }

    #[test]
    fn auth_and_limit_keys_are_validated() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default());
        let cfg =
            load(&[("PALAVER_AUTH__LOGIN_FAIL_LIMIT", "3"), ("PALAVER_LIMITS__MAX_SESSIONS_PER_USER", "0")]).unwrap();
        assert_eq!((cfg.auth.login_fail_limit, cfg.limits.max_sessions_per_user), (3, 0));
        assert!(cfg.auth.password_change_requires_current, "on by default");
        let e = load(&[("PALAVER_AUTH__LOGIN_FAIL_LIMIT", "60"), ("PALAVER_AUTH__LOGIN_IP_FAIL_LIMIT", "10")]);
        assert!(e.unwrap_err().to_string().contains("login_ip_fail_limit"));
        let e = load(&[("PALAVER_AUTH__LOGIN_BACKOFF_MAX_MS", "10")]);
        assert!(e.unwrap_err().to_string().contains("login_backoff_max_ms"));
        let e = load(&[("PALAVER_LIMITS__MAX_DESC_BYTES", "10")]);
        assert!(e.unwrap_err().to_string().contains("max_desc_bytes"));
        let e = load(&[("PALAVER_LIMITS__API_RATE_BURST", "0")]);
        assert!(e.unwrap_err().to_string().contains("api_rate_burst"));
    }

    #[test]
    fn redis_section_enables_redis_with_documented_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "[store]\nkind = \"mysql\"\nurl = \"mysql://u:p@127.0.0.1/c\"\n[store_config.redis]\naddr = \"127.0.0.1:6380\"\n").unwrap();
        let cfg = Config::load(Some(&file), Vec::new(), &CliOverrides::default()).unwrap();
        assert_eq!(cfg.store.kind, StoreKind::Mysql);
        let redis = cfg.store_config.redis.unwrap();
        assert_eq!(redis.addr, "127.0.0.1:6380");
        assert_eq!(redis.key_prefix, "im");
        assert_eq!(redis.pending_ttl_seconds, 120);
        assert!(Config::load(None, Vec::new(), &CliOverrides::default()).unwrap().store_config.redis.is_none());
        let e = Config::load(None, vec![("PALAVER_STORE__KIND".into(), "mysql".into())], &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("store.url"));
    }

    #[test]
    fn the_heartbeat_stays_well_below_the_redis_ttls() {
        let load = |beat: &str, redis: &str| {
            let vars = vec![
                ("PALAVER_SERVER__HEARTBEAT_MS".to_string(), beat.to_string()),
                ("PALAVER_STORE_CONFIG__REDIS".to_string(), redis.to_string()),
            ];
            Config::load(None, vars, &CliOverrides::default())
        };
        assert!(load("5000", "{ addr = \"127.0.0.1:6379\" }").is_ok(), "the defaults fit (5 s beats, 15 s claims)");
        let e = load("7500", "{ addr = \"127.0.0.1:6379\" }").unwrap_err().to_string();
        assert!(e.contains("server.heartbeat_ms") && e.contains("node_ttl_seconds"), "{e}");
        let e = load("1000", "{ addr = \"127.0.0.1:6379\", presence_ttl_seconds = 2 }").unwrap_err().to_string();
        assert!(e.contains("presence_ttl_seconds"), "{e}");
        assert!(load("500", "{ addr = \"127.0.0.1:6379\", node_ttl_seconds = 2, presence_ttl_seconds = 2 }").is_ok());
        // Without Redis nothing expires, so only the floor applies.
        let vars = vec![("PALAVER_SERVER__HEARTBEAT_MS".to_string(), "60000".to_string())];
        assert!(Config::load(None, vars, &CliOverrides::default()).is_ok());
    }

    #[test]
    fn otlp_export_is_off_by_default_and_checked_when_on() {
        let load = |pairs: &[(&str, &str)]| Config::load(None, env(pairs), &CliOverrides::default());
        let cfg = load(&[]).unwrap();
        assert_eq!(cfg.log.otlp, OtlpConfig::default());
        assert!(cfg.log.otlp.endpoint.is_empty(), "no export unless configured");
        let on = load(&[("PALAVER_LOG__OTLP__ENDPOINT", "https://otel.example:4318")]).unwrap();
        assert_eq!(on.log.otlp.endpoint, "https://otel.example:4318");
        for (key, value) in [
            ("PALAVER_LOG__OTLP__ENDPOINT", "otel.example:4318"),
            ("PALAVER_LOG__OTLP__ENDPOINT", "ftp://otel.example"),
            ("PALAVER_LOG__OTLP__SAMPLE_RATIO", "1.5"),
        ] {
            assert!(load(&[(key, value)]).is_err(), "{key}={value} is refused");
        }
    }

    #[test]
    fn node_id_falls_back_from_im_node_id_to_hostname_to_local() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(default_node_id(env(&[("IM_NODE_ID", "im-1"), ("HOSTNAME", "host")])), "im-1");
        assert_eq!(default_node_id(env(&[("IM_NODE_ID", " "), ("HOSTNAME", "host")])), "host");
        assert_eq!(default_node_id(env(&[])), "local");
    }
}
