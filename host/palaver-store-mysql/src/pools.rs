//! Per-tenant pools: opened lazily on a tenant's first port call, bounded in connections and in number, and closed
//! when idle.
//!
//! An open tenant is an `Arc<TenantDb>` in a map. Port calls hold a clone for their duration, so "in use" is
//! simply a strong count above one (taken under the map's lock, hence race-free). The reaper, a background task,
//! removes entries that are idle and unused, and entries whose tenant was disabled or removed meanwhile (another
//! node may have done that). Removing an entry drops the batch writer's queue; the writer finishes what it holds
//! and then closes the pool.

use crate::batch::{BatchSettings, Writer};
use crate::error::db_error;
use palaver_core::{StoreError, StoreResult, TenantId};
use parking_lot::Mutex;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{MySqlPool, Row};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Limits of tenant pools.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    pub(crate) max_connections: u32,
    pub(crate) max_pools: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) acquire_timeout: Duration,
    pub(crate) batch: BatchSettings,
}

/// One open tenant database: its pool and its batch writer.
#[derive(Debug)]
pub(crate) struct TenantDb {
    pub(crate) pool: MySqlPool,
    pub(crate) writer: Writer,
    /// Milliseconds since the registry's `epoch` at the last port call.
    last_used: AtomicU64,
}

/// The open tenant databases.
#[derive(Debug)]
pub(crate) struct TenantPools {
    control: MySqlPool,
    base: MySqlConnectOptions,
    settings: PoolSettings,
    epoch: Instant,
    open: Mutex<HashMap<TenantId, Arc<TenantDb>>>,
}

impl TenantPools {
    pub(crate) fn new(control: MySqlPool, base: MySqlConnectOptions, settings: PoolSettings) -> Arc<Self> {
        Arc::new(Self { control, base, settings, epoch: Instant::now(), open: Mutex::new(HashMap::new()) })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The histograms every tenant's batch writer adds to.
    pub(crate) fn batch_metrics(&self) -> &crate::batch::BatchMetrics {
        &self.settings.batch.metrics
    }

    /// The open database of an active tenant, opening it if needed. `NotFound` for unknown and disabled tenants.
    pub(crate) async fn get(&self, id: TenantId) -> StoreResult<Arc<TenantDb>> {
        if let Some(db) = self.open.lock().get(&id) {
            db.last_used.store(self.now(), Ordering::Relaxed);
            return Ok(Arc::clone(db));
        }
        let row = sqlx::query("SELECT database_name, status FROM tenants WHERE id = ?")
            .bind(id.0)
            .fetch_optional(&self.control)
            .await
            .map_err(db_error)?;
        let database: String = match row {
            Some(row) if row.try_get::<String, _>("status").map_err(db_error)? == "active" => {
                row.try_get("database_name").map_err(db_error)?
            }
            _ => return Err(StoreError::NotFound),
        };
        // Connecting is deferred to the first query, so building the pool does no I/O and cannot fail here.
        // No ping before each checkout: it cost every query (and every append batch) one more round trip. A
        // connection the server dropped fails its next statement instead, which the caller sees as
        // `Unavailable` and retries; idle ones are closed by the pool first (`idle_timeout`).
        let pool = MySqlPoolOptions::new()
            .test_before_acquire(false)
            .max_connections(self.settings.max_connections)
            .min_connections(0)
            .acquire_timeout(self.settings.acquire_timeout)
            .idle_timeout(Some(self.settings.idle_timeout))
            .connect_lazy_with(self.base.clone().database(&database));
        let fresh = Arc::new(TenantDb {
            writer: Writer::spawn(pool.clone(), self.settings.batch.clone()),
            pool,
            last_used: AtomicU64::new(self.now()),
        });
        self.insert(id, fresh)
    }

    /// Registers a newly opened database, unless another call opened the same tenant first (theirs wins and ours
    /// is dropped, closing it). At the cap, the least recently used idle pool makes room.
    fn insert(&self, id: TenantId, fresh: Arc<TenantDb>) -> StoreResult<Arc<TenantDb>> {
        let mut open = self.open.lock();
        if let Some(db) = open.get(&id) {
            return Ok(Arc::clone(db));
        }
        if open.len() >= self.settings.max_pools {
            let victim = open
                .iter()
                .filter(|(_, db)| Arc::strong_count(db) == 1)
                .min_by_key(|(_, db)| db.last_used.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            let Some(victim) = victim else {
                return Err(StoreError::Unavailable(format!(
                    "all {} tenant pools are in use",
                    self.settings.max_pools
                )));
            };
            open.remove(&victim);
        }
        open.insert(id, Arc::clone(&fresh));
        Ok(fresh)
    }

    /// Forgets the tenant's open database, e.g. after it was disabled; calls in flight finish on it.
    pub(crate) fn evict(&self, id: TenantId) {
        // The entry is dropped outside the lock: dropping the last handle of a writer queue wakes its task.
        let removed = self.open.lock().remove(&id);
        drop(removed);
    }

    /// How many tenant pools are open.
    pub(crate) fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Every open tenant pool, for shutdown.
    pub(crate) fn drain(&self) -> Vec<MySqlPool> {
        self.open.lock().drain().map(|(_, db)| db.pool.clone()).collect()
    }

    /// Closes idle pools and those of tenants that are no longer active.
    pub(crate) async fn reap(&self) {
        let idle_ms = u64::try_from(self.settings.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let now = self.now();
        let (idle, ids): (Vec<Arc<TenantDb>>, Vec<u64>) = {
            let mut open = self.open.lock();
            let stale: Vec<TenantId> = open
                .iter()
                .filter(|(_, db)| {
                    Arc::strong_count(db) == 1 && now.saturating_sub(db.last_used.load(Ordering::Relaxed)) >= idle_ms
                })
                .map(|(id, _)| *id)
                .collect();
            let idle = stale.iter().filter_map(|id| open.remove(id)).collect();
            (idle, open.keys().map(|id| id.0).collect())
        };
        drop(idle);
        if ids.is_empty() {
            return;
        }
        // One query for all open tenants; if the control database cannot answer, the pools stay as they are.
        let ids_json = serde_json::Value::from(ids.clone()).to_string();
        let active: Result<Vec<u64>, _> = sqlx::query_scalar(
            "SELECT t.id FROM tenants t WHERE t.status = 'active' AND t.id IN \
             (SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) j)",
        )
        .bind(ids_json)
        .fetch_all(&self.control)
        .await;
        match active {
            Ok(active) => {
                for id in ids.into_iter().filter(|id| !active.contains(id)) {
                    tracing::info!(tenant = id, "closing the pool of a tenant that is no longer active");
                    self.evict(TenantId(id));
                }
            }
            Err(err) => tracing::warn!(error = %err, "could not recheck the state of open tenants"),
        }
    }
}

/// Runs [`TenantPools::reap`] every quarter of the idle timeout (between 10 ms and 30 s) until the registry is
/// dropped. The task holds only a weak reference, so it never keeps the store alive.
pub(crate) fn spawn_reaper(pools: &Arc<TenantPools>) {
    let period = (pools.settings.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    let weak: Weak<TenantPools> = Arc::downgrade(pools);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(pools) = weak.upgrade() else { break };
            pools.reap().await;
        }
    });
}
