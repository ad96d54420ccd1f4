//! The Redis settings of the scale-out mode, with the documented key names (`store_config.redis`) and defaults.
//!
//! The struct deserialises from the documented JSON/TOML shape directly; fields of Palaver's own (pool size,
//! hot-message capacity, the last-seen lifetime) have defaults chosen for a 2-core node.

use std::time::Duration;

/// How the adapter reaches Redis and how long each kind of key lives.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `host:port`, or a `redis://` URL whose credentials and database are used unless the fields below are set.
    pub addr: String,
    /// ACL user name; empty means none.
    pub username: String,
    /// A secret: never logged, and shown as `***` by `Debug` and [`RedisConfig::redacted`].
    pub password: String,
    /// The database number. Tests that flush use a database of their own.
    pub db: i64,
    /// The first segment of every key, `im` by default.
    pub key_prefix: String,
    pub dial_timeout_ms: u64,
    pub read_timeout_ms: u64,
    pub write_timeout_ms: u64,
    /// After repeated transport failures, how long commands fail fast instead of waiting for timeouts; 0 never.
    pub circuit_cooldown_ms: u64,
    /// Connections in the pool. Each is multiplexed, so a handful serve many concurrent tasks.
    pub pool_size: usize,
    /// How long an idempotency key stays `pending` before a retry may take it.
    pub pending_ttl_seconds: u64,
    /// How long a `done` idempotency key answers retries with its seq.
    pub done_ttl_seconds: u64,
    /// How long a `failed` key is kept; a retry takes it over at once either way.
    pub failed_ttl_seconds: u64,
    /// How long a hot message copy lives.
    pub hot_message_ttl_seconds: u64,
    /// How long an online session lives without a heartbeat.
    pub presence_ttl_seconds: u64,
    /// How long the offline record (with `last_seen_at`) of a user is kept after the last session left.
    pub presence_last_seen_ttl_seconds: u64,
    /// How long a cache-aside copy of a user, topic or subscription lives.
    pub cache_ttl_seconds: u64,
    /// How long an invalidated cache copy refuses to be filled again, so that a read which loaded the old
    /// record just before a write cannot put it back for a whole TTL. Far above one database read.
    pub cache_invalidation_grace_ms: u64,
    /// A group with at least this many members keeps hot message copies (see `HotPolicy::MinMembers`).
    pub hot_group_min_members: usize,
    /// The most hot message copies one tenant may hold; past it the oldest are evicted.
    pub hot_max_messages_per_tenant: usize,
    /// Messages whose stored form is larger than this are not copied to Redis (large bodies stay out of Redis).
    pub hot_message_max_bytes: usize,
    /// How long a node's claim on its id lives without a heartbeat (`server.heartbeat_ms`, which the server
    /// keeps under half of it); a crashed node's id is free after it.
    pub node_ttl_seconds: u64,
    /// How long a session-control counter lives after its last bump (one to seven days is the accepted range). A
    /// session older than that may miss an eviction whose bus message was lost as well.
    pub control_ttl_seconds: u64,
}

impl Default for RedisConfig {
    /// The documented example values.
    fn default() -> Self {
        Self {
            addr: "127.0.0.1:6379".into(),
            username: String::new(),
            password: String::new(),
            db: 0,
            key_prefix: "im".into(),
            dial_timeout_ms: 2000,
            read_timeout_ms: 2000,
            write_timeout_ms: 2000,
            pool_size: 16,
            circuit_cooldown_ms: 1000,
            pending_ttl_seconds: 120,
            done_ttl_seconds: 86_400,
            failed_ttl_seconds: 600,
            hot_message_ttl_seconds: 86_400,
            presence_ttl_seconds: 120,
            presence_last_seen_ttl_seconds: 86_400,
            cache_ttl_seconds: 300,
            cache_invalidation_grace_ms: 2000,
            hot_group_min_members: 500,
            hot_max_messages_per_tenant: 200_000,
            hot_message_max_bytes: 16 * 1024,
            node_ttl_seconds: 15,
            control_ttl_seconds: 7 * 86_400,
        }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("redis.{0} must not be empty")]
    Empty(&'static str),
    #[error("redis.{0} must be above zero")]
    Zero(&'static str),
    #[error("redis.key_prefix {0:?} must not contain ':' or whitespace")]
    Prefix(String),
    #[error("redis.addr {0:?} is neither host:port nor a redis:// URL")]
    Addr(String),
}

impl RedisConfig {
    /// The defaults pointed at `addr` (a `host:port` or a `redis://` URL).
    pub fn with_addr(addr: impl Into<String>) -> Self {
        Self { addr: addr.into(), ..Self::default() }
    }

    /// Checks what would make the adapter misbehave rather than fail loudly at the first command.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.addr.trim().is_empty() {
            return Err(ConfigError::Empty("addr"));
        }
        if self.key_prefix.is_empty() {
            return Err(ConfigError::Empty("key_prefix"));
        }
        // A colon in the prefix would let one prefix's keys parse as another's tenant segment.
        if self.key_prefix.contains(':') || self.key_prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::Prefix(self.key_prefix.clone()));
        }
        let positive = [
            ("dial_timeout_ms", self.dial_timeout_ms),
            ("read_timeout_ms", self.read_timeout_ms),
            ("write_timeout_ms", self.write_timeout_ms),
            ("pending_ttl_seconds", self.pending_ttl_seconds),
            ("done_ttl_seconds", self.done_ttl_seconds),
            ("failed_ttl_seconds", self.failed_ttl_seconds),
            ("hot_message_ttl_seconds", self.hot_message_ttl_seconds),
            ("presence_ttl_seconds", self.presence_ttl_seconds),
            ("presence_last_seen_ttl_seconds", self.presence_last_seen_ttl_seconds),
            ("cache_ttl_seconds", self.cache_ttl_seconds),
            ("cache_invalidation_grace_ms", self.cache_invalidation_grace_ms),
            ("node_ttl_seconds", self.node_ttl_seconds),
            ("control_ttl_seconds", self.control_ttl_seconds),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(ConfigError::Zero(name));
        }
        if self.pool_size == 0 {
            return Err(ConfigError::Zero("pool_size"));
        }
        if self.hot_max_messages_per_tenant == 0 {
            return Err(ConfigError::Zero("hot_max_messages_per_tenant"));
        }
        Ok(())
    }

    /// A copy safe to print: the password replaced by `***` when one is set.
    pub fn redacted(&self) -> Self {
        let password = if self.password.is_empty() { String::new() } else { "***".into() };
        Self { password, ..self.clone() }
    }

    /// The bound on establishing a connection.
    pub fn dial_timeout(&self) -> Duration {
        Duration::from_millis(self.dial_timeout_ms)
    }

    /// The bound on one command's round trip once connected: writing it and reading the reply.
    pub fn io_timeout(&self) -> Duration {
        Duration::from_millis(self.read_timeout_ms.saturating_add(self.write_timeout_ms))
    }

    /// The bound on a whole command, waiting for a pooled connection included.
    pub fn command_timeout(&self) -> Duration {
        self.dial_timeout() + self.io_timeout()
    }
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.redacted();
        f.debug_struct("RedisConfig")
            .field("addr", &shown.addr)
            .field("username", &shown.username)
            .field("password", &shown.password)
            .field("db", &shown.db)
            .field("key_prefix", &shown.key_prefix)
            .field("pool_size", &shown.pool_size)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_documented_values_and_validate() {
        let c = RedisConfig::default();
        assert_eq!((c.pending_ttl_seconds, c.done_ttl_seconds, c.failed_ttl_seconds), (120, 86_400, 600));
        assert_eq!((c.presence_ttl_seconds, c.cache_ttl_seconds), (120, 300));
        assert_eq!(c.key_prefix.as_str(), "im");
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(
            RedisConfig { key_prefix: "a:b".into(), ..c.clone() }.validate(),
            Err(ConfigError::Prefix("a:b".into()))
        );
        assert_eq!(RedisConfig { pool_size: 0, ..c }.validate(), Err(ConfigError::Zero("pool_size")));
    }

    #[test]
    fn node_and_control_settings_default_and_validate() {
        let c = RedisConfig::default();
        assert_eq!((c.node_ttl_seconds, c.control_ttl_seconds), (15, 604_800));
        assert_eq!(
            RedisConfig { node_ttl_seconds: 0, ..c.clone() }.validate(),
            Err(ConfigError::Zero("node_ttl_seconds"))
        );
        assert_eq!(
            RedisConfig { control_ttl_seconds: 0, ..c.clone() }.validate(),
            Err(ConfigError::Zero("control_ttl_seconds"))
        );
        assert_eq!(RedisConfig { node_ttl_seconds: 1, ..c }.validate(), Ok(()));
    }

    #[test]
    fn parses_the_documented_example_and_hides_the_password() {
        let json = r#"{"addr":"127.0.0.1:6379","username":"","password":"s3cret","db":0,"key_prefix":"im",
            "dial_timeout_ms":2000,"read_timeout_ms":2000,"write_timeout_ms":2000,"pending_ttl_seconds":120,
            "done_ttl_seconds":86400,"failed_ttl_seconds":600,"hot_message_ttl_seconds":86400,
            "presence_ttl_seconds":120,"cache_ttl_seconds":300}"#;
        let c: RedisConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.cache_ttl_seconds, 300);
        assert_eq!(c.pool_size, RedisConfig::default().pool_size, "unnamed fields keep their defaults");
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret") && shown.contains("***"), "{shown}");
        assert_eq!(c.redacted().password, "***");
    }
}
