//! The pooled Redis client every adapter of this crate shares: one deadpool pool of multiplexed connections,
//! one timeout around every command, and the mapping from Redis failures to `StoreError`.
//!
//! deadpool checks a connection with a `PING` each time it is taken from the pool, which would double the
//! round trips of every command. The client therefore keeps `pool_size` connections checked out in slots and
//! runs commands on clones of their multiplexed handles (a multiplexed connection carries concurrent requests
//! by design). A slot whose command fails in transport is emptied, which returns its connection to the pool;
//! refilling the slot takes a connection from the pool again, where the `PING` discards a dead one. So the pool
//! still creates, bounds and health-checks the connections, and the steady state costs one round trip.
//!
//! A Redis that stops answering (a partition rather than a refused connection) would make every command wait
//! for its timeout, and with it every request that reads a cache. After a few transport failures in a row the
//! client therefore fails fast for `circuit_cooldown_ms`, then lets commands try again (Redis down: go
//! straight to the database).

use crate::config::{ConfigError, RedisConfig};
use crate::keys::Keys;
use crate::metrics::RedisMetrics;
use deadpool_redis::{Connection, Manager, Pool, PoolError, Runtime, Timeouts};
use palaver_core::{StoreError, StoreResult};
use parking_lot::Mutex;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, FromRedisValue, IntoConnectionInfo, ServerErrorKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Transport failures in a row after which the circuit opens.
const CIRCUIT_THRESHOLD: u32 = 3;

/// Why a client could not be built. Building does no I/O, so an unreachable server is not among these: it
/// shows up as `StoreError::Unavailable` at the first command.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("redis connection settings: {0}")]
    Connection(String),
    #[error("redis pool: {0}")]
    Pool(String),
}

/// A cheap-to-clone handle on the pool, the key builder and the shared counters.
#[derive(Clone)]
pub struct RedisClient {
    pool: Pool,
    slots: Arc<Slots>,
    circuit: Arc<Circuit>,
    keys: Keys,
    config: Arc<RedisConfig>,
    metrics: Arc<RedisMetrics>,
    command_timeout: Duration,
}

impl std::fmt::Debug for RedisClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisClient").field("config", &self.config).finish_non_exhaustive()
    }
}

impl RedisClient {
    /// Validates `config` and builds the pool. No connection is opened until the first command, so a node can
    /// start while Redis is down and serve in degraded mode.
    pub fn connect(config: RedisConfig) -> Result<Self, SetupError> {
        config.validate()?;
        let info = connection_info(&config)?;
        let conn_config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(config.dial_timeout()))
            .set_response_timeout(Some(config.io_timeout()));
        let manager = Manager::new_with_config(info, conn_config).map_err(|e| SetupError::Connection(e.to_string()))?;
        let timeouts = Timeouts {
            wait: Some(config.dial_timeout()),
            create: Some(config.dial_timeout()),
            recycle: Some(config.io_timeout()),
        };
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .timeouts(timeouts)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| SetupError::Pool(e.to_string()))?;
        Ok(Self {
            pool,
            slots: Arc::new(Slots::new(config.pool_size)),
            circuit: Arc::new(Circuit::new(config.circuit_cooldown_ms)),
            keys: Keys::new(&config.key_prefix),
            command_timeout: config.command_timeout(),
            config: Arc::new(config),
            metrics: Arc::new(RedisMetrics::default()),
        })
    }

    /// The key builder for this client's prefix.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The settings the client was built with.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    /// The counters every adapter built on this client adds to.
    pub fn metrics(&self) -> &RedisMetrics {
        &self.metrics
    }

    /// The same counters, shared, to register with the node's `/metrics`.
    pub fn metrics_source(&self) -> Arc<RedisMetrics> {
        self.metrics.clone()
    }

    /// Round-trips a `PING`; for readiness probes and tests.
    pub async fn ping(&self) -> StoreResult<()> {
        let reply: String = self.query(&redis::cmd("PING")).await?;
        if reply == "PONG" { Ok(()) } else { Err(StoreError::Internal(format!("PING answered {reply:?}"))) }
    }

    /// Runs one command.
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> StoreResult<T> {
        self.guarded(async |mut conn: MultiplexedConnection| cmd.query_async(&mut conn).await).await
    }

    /// Runs a pipeline (atomic if it was built with `atomic()`).
    pub async fn pipeline<T: FromRedisValue>(&self, pipe: &redis::Pipeline) -> StoreResult<T> {
        self.guarded(async |mut conn: MultiplexedConnection| pipe.query_async(&mut conn).await).await
    }

    /// Runs a Lua script by its SHA, loading it on the first `NOSCRIPT`.
    pub async fn script<T: FromRedisValue>(&self, invocation: &redis::ScriptInvocation<'_>) -> StoreResult<T> {
        self.guarded(async |mut conn: MultiplexedConnection| invocation.invoke_async(&mut conn).await).await
    }

    /// Runs a pipeline that calls `scripts` by their SHA. On `NOSCRIPT` (a restarted or flushed Redis) it
    /// loads them and runs the pipeline once more, so callers must build pipelines that are safe to repeat
    /// when none of their script calls ran.
    pub(crate) async fn script_pipeline<T: FromRedisValue>(
        &self,
        scripts: &[&redis::Script],
        pipe: &redis::Pipeline,
    ) -> StoreResult<T> {
        self.guarded(async |mut conn: MultiplexedConnection| match pipe.query_async(&mut conn).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript) => {
                for script in scripts {
                    script.load_async(&mut conn).await?;
                }
                pipe.query_async(&mut conn).await
            }
            other => other,
        })
        .await
    }

    /// A plain client for a dedicated connection (the bus's Pub/Sub subscriber), outside the pool and the
    /// circuit: a subscriber must keep trying to reconnect however the pool fares.
    pub(crate) fn dedicated(&self) -> StoreResult<redis::Client> {
        let info = connection_info(&self.config).map_err(|e| StoreError::Internal(e.to_string()))?;
        redis::Client::open(info).map_err(redis_error)
    }

    /// A handle on the connection of one slot, taking a connection from the pool if the slot is empty.
    async fn handle(&self) -> StoreResult<(usize, MultiplexedConnection)> {
        let slot = self.slots.pick();
        if let Some(conn) = self.slots.get(slot) {
            return Ok((slot, conn));
        }
        // One filler per slot: the slots hold every pooled connection, so a second filler of the same slot
        // could wait for a connection that no one will ever return.
        let _filling = self.slots.filling[slot].lock().await;
        if let Some(conn) = self.slots.get(slot) {
            return Ok((slot, conn));
        }
        let object = self.pool.get().await.map_err(pool_error)?;
        Ok((slot, self.slots.fill(slot, object)))
    }

    /// Runs `command` on a slot's connection, bounded by the configured timeout, and counts its outcome. A
    /// transport failure or a timeout empties the slot, so the next command there gets a checked connection.
    async fn guarded<T, F>(&self, command: F) -> StoreResult<T>
    where
        F: AsyncFnOnce(MultiplexedConnection) -> redis::RedisResult<T>,
    {
        self.metrics.command();
        if !self.circuit.allows() {
            self.metrics.command_failed();
            self.metrics.circuit_open();
            return Err(StoreError::Unavailable("redis circuit open after repeated failures".into()));
        }
        let run = async {
            let (_, conn) = self.handle().await?;
            command(conn).await.map_err(|e| {
                let error = redis_error(e);
                if matches!(error, StoreError::Unavailable(_)) {
                    // A broken pipe on one connection usually means the network to Redis broke for all of
                    // them; refilling every slot at once keeps each stale connection from failing one more
                    // command (and reopening the circuit) after Redis is back.
                    self.slots.empty_all();
                }
                error
            })
        };
        let started = Instant::now();
        let result = match tokio::time::timeout(self.command_timeout, run).await {
            Ok(result) => result,
            Err(_) => {
                self.slots.empty_all();
                Err(StoreError::Unavailable(format!("redis command timed out after {:?}", self.command_timeout)))
            }
        };
        let took = started.elapsed();
        match &result {
            Ok(_) => {
                self.circuit.succeeded();
                self.metrics.command_done(took, false);
            }
            Err(StoreError::Unavailable(_)) => {
                self.metrics.command_failed();
                self.metrics.command_done(took, true);
                self.circuit.failed();
            }
            Err(_) => {
                self.metrics.command_failed();
                // Redis answered (a script error, a bad reply): the transport is fine.
                self.metrics.command_done(took, false);
            }
        }
        result
    }
}

/// Consecutive transport failures, and until when (in milliseconds since `base`) commands fail fast.
struct Circuit {
    base: Instant,
    cooldown_ms: u64,
    failures: AtomicU32,
    open_until: AtomicU64,
}

impl Circuit {
    fn new(cooldown_ms: u64) -> Self {
        Self { base: Instant::now(), cooldown_ms, failures: AtomicU32::new(0), open_until: AtomicU64::new(0) }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn allows(&self) -> bool {
        self.now() >= self.open_until.load(Ordering::Relaxed)
    }

    fn succeeded(&self) {
        self.failures.store(0, Ordering::Relaxed);
    }

    fn failed(&self) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if self.cooldown_ms > 0 && failures >= CIRCUIT_THRESHOLD {
            self.open_until.store(self.now() + self.cooldown_ms, Ordering::Relaxed);
            tracing::warn!(cooldown_ms = self.cooldown_ms, "redis failing; commands fail fast for the cooldown");
        }
    }
}

/// Pool connections held checked out, one per slot, used round-robin.
struct Slots {
    held: Mutex<Vec<Option<Connection>>>,
    filling: Vec<tokio::sync::Mutex<()>>,
    next: AtomicUsize,
}

impl Slots {
    fn new(size: usize) -> Self {
        let size = size.max(1);
        Self {
            held: Mutex::new((0..size).map(|_| None).collect()),
            filling: (0..size).map(|_| tokio::sync::Mutex::new(())).collect(),
            next: AtomicUsize::new(0),
        }
    }

    fn pick(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.filling.len()
    }

    fn get(&self, slot: usize) -> Option<MultiplexedConnection> {
        self.held.lock().get(slot).and_then(|c| c.as_deref().cloned())
    }

    /// Keeps `object` in the slot and answers a handle on it.
    fn fill(&self, slot: usize, object: Connection) -> MultiplexedConnection {
        let handle = MultiplexedConnection::clone(&object);
        if let Some(entry) = self.held.lock().get_mut(slot) {
            entry.get_or_insert(object);
        }
        handle
    }

    /// After a timeout or a transport fault every slot is refilled through the pool, whose recycle check drops
    /// the broken connections.
    fn empty_all(&self) {
        let dropped: Vec<_> = self.held.lock().iter_mut().filter_map(Option::take).collect();
        drop(dropped);
    }
}

/// Builds the connection settings from `addr` plus the credential and database fields.
fn connection_info(config: &RedisConfig) -> Result<redis::ConnectionInfo, SetupError> {
    let addr = config.addr.trim();
    let bad = || SetupError::Config(ConfigError::Addr(addr.to_owned()));
    let info = if addr.starts_with("redis://") || addr.starts_with("rediss://") {
        addr.into_connection_info().map_err(|_| bad())?
    } else {
        let (host, port) = match addr.rsplit_once(':') {
            Some((host, port)) => (host, port.parse::<u16>().map_err(|_| bad())?),
            None => (addr, 6379),
        };
        if host.is_empty() {
            return Err(bad());
        }
        ConnectionAddr::Tcp(host.to_owned(), port).into_connection_info().map_err(|_| bad())?
    };
    let mut redis_info = info.redis_settings().clone();
    if config.db != 0 {
        redis_info = redis_info.set_db(config.db);
    }
    if !config.username.is_empty() {
        redis_info = redis_info.set_username(config.username.clone());
    }
    if !config.password.is_empty() {
        redis_info = redis_info.set_password(config.password.clone());
    }
    Ok(info.set_redis_settings(redis_info))
}

/// Pool failures are all about reaching Redis (waiting, connecting), so they are retryable.
fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => redis_error(e),
        other => StoreError::Unavailable(format!("redis pool: {other}")),
    }
}

/// Transport faults and server states that pass (loading, failover, read-only replica, busy script) are
/// retryable; anything else means a bug or corrupt data and is internal.
pub(crate) fn redis_error(e: redis::RedisError) -> StoreError {
    let passing = matches!(
        e.kind(),
        redis::ErrorKind::Io
            | redis::ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
    );
    let busy = matches!(e.code(), Some("BUSY" | "OOM"));
    if passing || busy || e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        StoreError::Unavailable(format!("redis: {e}"))
    } else {
        StoreError::Internal(format!("redis: {e}"))
    }
}

/// Redis down degrades the node (reads fall back to the database, group sends answer a retryable 503), so it
/// is reported, not required.
#[async_trait::async_trait]
impl palaver_core::ports::HealthCheck for RedisClient {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn required(&self) -> bool {
        false
    }

    async fn check(&self) -> Result<(), String> {
        self.ping().await.map_err(|e| format!("Redis: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rediss_url_connects_over_tls_and_a_plain_address_does_not() {
        let tls = connection_info(&RedisConfig::with_addr("rediss://cache.example:6380/2")).unwrap();
        match tls.addr() {
            ConnectionAddr::TcpTls { host, port, insecure, .. } => {
                assert_eq!((host.as_str(), *port, *insecure), ("cache.example", 6380, false));
            }
            other => panic!("not TLS: {other:?}"),
        }
        assert_eq!(tls.redis_settings().db(), 2);
        let plain = connection_info(&RedisConfig::with_addr("127.0.0.1:6379")).unwrap();
        assert!(matches!(plain.addr(), ConnectionAddr::Tcp(..)), "{:?}", plain.addr());
        assert!(connection_info(&RedisConfig::with_addr("rediss://")).is_err());
    }
}
