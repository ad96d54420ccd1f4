//! Redis adapters for the scale-out mode, with data in three layers (process memory, Redis, the database):
//! Redis holds small, hot, cross-node state; the database stays the source of truth for everything durable.
//!
//! What lives here, each behind one shared [`RedisClient`] (a deadpool pool, a timeout on every command):
//!
//! | type | port | state | on a Redis fault |
//! | --- | --- | --- | --- |
//! | [`RedisSeq`] | `SeqAllocator` | `last_seq` counters | `Unavailable`: a retryable refusal, never a database seq |
//! | [`RedisIdempotency`] | `IdempotencyStore` | `uniq:msg` | `Unavailable`; the store's unique key backs it |
//! | [`RedisPresence`] | `PresenceStore` | user presence, group online members | `Presence::Unknown` |
//! | [`HotMessages`] | `MessageStore` decorator | hot messages | reads and writes go to the inner store |
//! | [`CachedUsers`], [`CachedTopics`], [`CachedSubs`] | storage decorators | cache-aside | reads go to the store |
//! | [`RedisLoginFailures`] | `LoginFailureStore` | short-lived state | an error: security state fails closed |
//! | [`RedisCodes`] | `CodeStore` | short-lived state (`verify:*`) | an error: no code issued or accepted |
//! | [`RedisBus`] | `RealtimeBus` | Pub/Sub channels | `publish` drops (counted); the subscriber reconnects |
//! | [`RedisNodes`] | `NodeRegistry` | node identity | an error: a node must not start on an unknown claim |
//! | [`RedisControl`] | `SessionControlStore` | control versions | an error |
//!
//! The decorators wrap an inner `Arc<dyn …>` port, so this crate depends on `palaver-core` only; [`CachedStorage`]
//! stacks all four over one adapter with their copies kept coherent with each other (a message append patches
//! the cached topic's `seq`, a soft delete drops the deleter's cached subscription).
//!
//! Every key is built by [`Keys`] as `{prefix}:{tenant_id}:…`, so tenants sharing a Redis never meet, and the
//! counters of [`RedisMetrics`] cover commands and failures, cache hit rate, fallbacks and the bus.
//!
//! ## Wiring
//!
//! The composition root builds one client and hands each port its adapter; the storage decorators go over
//! the database adapter, with `CachedStorage` seen four ways:
//!
//! ```ignore
//! let client = RedisClient::connect(config.redis.clone())?;          // no I/O: a down Redis degrades
//! let redis = RedisPorts::new(&client, &config.node_id);
//! let db = Arc::new(MysqlStore::open(&config.mysql).await?);
//! let policy = HotPolicy::min_members(db.clone(), client.config().hot_group_min_members, Duration::from_secs(60));
//! let cached = Arc::new(CachedStorage::over(client.clone(), db, policy));
//! let ports = Ports {
//!     users: cached.clone(),
//!     topics: cached.clone(),
//!     subs: cached.clone(),
//!     messages: cached,
//!     seq: Arc::new(redis.seq),
//!     idempotency: Arc::new(redis.idempotency),
//!     presence: Arc::new(redis.presence),
//!     bus: Arc::new(redis.bus.clone()),                                 // keep a clone for readiness
//!     control: Arc::new(redis.control),
//!     ..
//! };
//! redis.nodes.register(&node_info).await?;                              // then `heartbeat` every server.heartbeat_ms
//! ```
//!
//! `/readyz` can call [`RedisClient::ping`] and [`RedisBus::subscriber_connected`]; the counters of
//! [`RedisClient::metrics_source`] render, as a `palaver_core::MetricsSource`, in the node's `/metrics`.
//!
//! **Limits, by design.** The scripts name some keys they build themselves (eviction of other topics' hot
//! copies, the online-node sets), so they assume a single Redis, not a Cluster. A cache copy whose
//! invalidation fails stays until its TTL (`cache_ttl_seconds`), a staleness the design accepts; writes are never
//! rolled back for it.

mod bus;
mod cache;
mod client;
mod codec;
mod codes;
mod coherence;
mod config;
mod control;
mod copies;
mod envelope;
mod hot;
mod idempotency;
mod keys;
mod login_failures;
mod metrics;
mod nodes;
mod online;
mod policy;
mod presence;
mod push;
mod scripts;
mod seq;
mod storage;
mod subscriber;

pub use bus::{BusConfig, RedisBus};
pub use cache::{CachedSubs, CachedTopics, CachedUsers};
pub use client::{RedisClient, SetupError};
pub use codes::RedisCodes;
pub use config::{ConfigError, RedisConfig};
pub use control::RedisControl;
pub use envelope::{EnvelopeError, decode as decode_envelope, encode as encode_envelope};
pub use hot::HotMessages;
pub use idempotency::RedisIdempotency;
pub use keys::Keys;
pub use login_failures::RedisLoginFailures;
pub use metrics::{MetricsSnapshot, RedisMetrics};
pub use nodes::RedisNodes;
pub use policy::{HotPolicy, HotPredicate, MemberThreshold};
pub use presence::RedisPresence;
pub use push::RedisPushDedup;
pub use seq::RedisSeq;
pub use storage::CachedStorage;

/// Everything the scale-out mode builds from one client: the Redis-native ports.
/// The storage decorators need the inner ports as well, so they are built apart ([`CachedStorage::new`]).
#[derive(Clone, Debug)]
pub struct RedisPorts {
    pub seq: RedisSeq,
    pub idempotency: RedisIdempotency,
    pub presence: RedisPresence,
    pub login_failures: RedisLoginFailures,
    pub codes: RedisCodes,
    pub bus: RedisBus,
    pub nodes: RedisNodes,
    pub control: RedisControl,
    pub push_dedup: RedisPushDedup,
}

impl RedisPorts {
    /// The Redis-native adapters of node `node_id` over one client, the bus with [`BusConfig::default`]. Builds
    /// without I/O and spawns nothing: the bus starts its tasks at its first `publish` or `subscribe`.
    pub fn new(client: &RedisClient, node_id: impl Into<String>) -> Self {
        let node_id = node_id.into();
        Self {
            seq: RedisSeq::new(client.clone()),
            idempotency: RedisIdempotency::new(client.clone()),
            presence: RedisPresence::new(client.clone(), node_id.clone()),
            login_failures: RedisLoginFailures::new(client.clone()),
            codes: RedisCodes::new(client.clone()),
            bus: RedisBus::new(client.clone(), node_id, BusConfig::default()),
            nodes: RedisNodes::new(client.clone()),
            control: RedisControl::new(client.clone()),
            push_dedup: RedisPushDedup::new(client.clone()),
        }
    }
}
