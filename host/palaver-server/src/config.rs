//! The one typed configuration: defaults < TOML file < `PALAVER_*` environment < command line, validated once
//! at start and then handed down by value.
//!
//! Environment variables name a key by its TOML path with `__` between levels, e.g.
//! `PALAVER_SERVER__LISTEN=0.0.0.0:6060` or `PALAVER_LIMITS__MAX_MESSAGE_SIZE=65536`.

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
    pub heartbeat_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:6060".into(),
            data_dir: PathBuf::from("./data"),
            node_id: String::new(),
            drain_grace_ms: 1500,
            heartbeat_ms: 10_000,
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
    /// Redis, with the seed's keys and TTLs; its fields are documented on the adapter's struct.
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
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            token_key: String::new(),
            token_ttl_seconds: 14 * 24 * 3600,
            argon2_memory_kib: 19_456,
            argon2_iterations: 2,
            evict_same_platform: false,
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
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_message_size: 256 * 1024,
            rate_per_second: 50.0,
            rate_burst: 200,
            max_subscriber_count: 4096,
            session_queue: 512,
        }
    }
}

/// WebSocket and long-polling settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    pub ws_read_buffer: usize,
    pub ws_write_buffer: usize,
    pub idle_timeout_seconds: u64,
    pub ping_interval_seconds: u64,
    pub lp_poll_timeout_seconds: u64,
    pub lp_session_timeout_seconds: u64,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            ws_read_buffer: 4096,
            ws_write_buffer: 0,
            idle_timeout_seconds: 55,
            ping_interval_seconds: 25,
            lp_poll_timeout_seconds: 25,
            lp_session_timeout_seconds: 60,
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
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig { dir: PathBuf::new(), cache_dir: PathBuf::new(), watch: true, watch_interval_ms: 1000 }
    }
}

/// The admin API (`/v1/admin/…`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// The bearer token admin calls must carry. Empty: the node has no admin API.
    pub token: String,
}

/// Logging.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A `tracing` filter such as `info` or `palaver_service=debug,info`.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { level: "info".into() }
    }
}

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
        for (name, value) in env {
            let Some(rest) = name.strip_prefix("PALAVER_") else { continue };
            if rest == "LOG" {
                // PALAVER_LOG is the tracing filter (read when logging starts), not a configuration key.
                continue;
            }
            let path: Vec<String> = rest.split("__").map(|s| s.to_lowercase()).collect();
            if path.len() != 2 || path.iter().any(String::is_empty) {
                return Err(ConfigError::Env { name, why: "expected PALAVER_SECTION__KEY".into() });
            }
            // A value that reads as TOML (a number, a boolean, a quoted string) keeps its type;
            // anything else is taken as a plain string.
            let parsed = format!("v = {value}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or(toml::Value::String(value));
            let section = table.entry(path[0].clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            match section {
                toml::Value::Table(t) => {
                    t.insert(path[1].clone(), parsed);
                }
                _ => return Err(ConfigError::Env { name, why: "section is not a table".into() }),
            }
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
        if palaver_gateway::apikey::decode_salt(&self.api.key_salt).is_err() {
            return bad("api.key_salt must be standard base64".into());
        }
        if !self.auth.token_key.is_empty() && self.token_key_bytes().is_none_or(|k| k.len() < 32) {
            return bad("auth.token_key must be base64 of at least 32 bytes".into());
        }
        if self.auth.token_ttl_seconds < 60 {
            return bad("auth.token_ttl_seconds must be at least 60".into());
        }
        if self.auth.argon2_memory_kib < 8 || self.auth.argon2_iterations < 1 {
            return bad("auth.argon2_memory_kib must be ≥ 8 and auth.argon2_iterations ≥ 1".into());
        }
        let l = &self.limits;
        if !(256..=64 * 1024 * 1024).contains(&l.max_message_size) {
            return bad("limits.max_message_size must be between 256 bytes and 64 MiB".into());
        }
        if l.rate_per_second < 0.0 || !l.rate_per_second.is_finite() || l.rate_burst == 0 {
            return bad("limits.rate_per_second must be ≥ 0 and limits.rate_burst ≥ 1".into());
        }
        if l.max_subscriber_count == 0 || l.session_queue < 8 {
            return bad("limits.max_subscriber_count must be ≥ 1 and limits.session_queue ≥ 8".into());
        }
        if !self.admin.token.is_empty() && self.admin.token.len() < 16 {
            return bad("admin.token must be at least 16 characters".into());
        }
        if self.plugins.watch_interval_ms < 50 {
            return bad("plugins.watch_interval_ms must be at least 50".into());
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
        if !shown.auth.token_key.is_empty() {
            shown.auth.token_key = "<redacted>".into();
        }
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

/// Hides the password of a `scheme://user:pass@host/…` URL.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((auth, host)) = rest.split_once('@') else { return url.to_owned() };
    let user = auth.split(':').next().unwrap_or_default();
    format!("{scheme}://{user}:<redacted>@{host}")
}

/// The node id when none is configured (seed 002 §1.1): `IM_NODE_ID`, else `HOSTNAME`, else `local`.
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
        assert_eq!(cfg.transport.ws_read_buffer, 4096, "defaults fill the rest");
    }

    #[test]
    fn bad_values_are_refused_with_a_reason() {
        let e = Config::load(None, env(&[("PALAVER_SERVER__LISTEN", "nowhere")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("server.listen"));
        let e = Config::load(None, env(&[("PALAVER_LIMITS__MAX_MESSAGE_SIZE", "1")]), &CliOverrides::default());
        assert!(e.unwrap_err().to_string().contains("max_message_size"));
        let e = Config::load(None, env(&[("PALAVER_NOPE", "1")]), &CliOverrides::default());
        assert!(e.is_err());
        assert!(Config::load(None, env(&[("PALAVER_LOG", "debug")]), &CliOverrides::default()).is_ok());
        let e = Config::load(None, env(&[("PALAVER_SERVER__BOGUS", "1")]), &CliOverrides::default());
        assert!(e.is_err(), "unknown keys are refused");
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
    fn redis_section_enables_redis_with_seed_defaults() {
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
    fn node_id_falls_back_from_im_node_id_to_hostname_to_local() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(default_node_id(env(&[("IM_NODE_ID", "im-1"), ("HOSTNAME", "host")])), "im-1");
        assert_eq!(default_node_id(env(&[("IM_NODE_ID", " "), ("HOSTNAME", "host")])), "host");
        assert_eq!(default_node_id(env(&[])), "local");
    }
}
