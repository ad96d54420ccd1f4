//! The plugin key-value port over a tenant database: the `plugin_kv` and `plugin_kv_scopes` tables of migration
//! 0017. The database is the tenant, so a scope is one plugin's rows.
//!
//! A commit runs in one transaction that first makes sure the scope's row in `plugin_kv_scopes` exists and locks it
//! (`SELECT … FOR UPDATE`): commits of one scope, from any node, take turns there. Holding it, the commit drops the
//! scope's expired rows, reads its usage and the live values of the keys the batch touches, decides the batch with
//! [`plan`] and applies it, or rolls back having written nothing. The reads come after the lock, so they see every
//! commit of the scope that went before (the transaction's snapshot is taken at its first plain read, which is
//! after the lock), and the quota holds across nodes. A commit that loses a deadlock (two first commits of a scope
//! racing to create its row) runs again from the start.

use crate::MysqlStore;
use crate::error::is_deadlock;
use palaver_core::now_millis;
use palaver_core::ports::{KvError, KvOp, KvQuota, KvScope, KvUsage, KvWrite, PluginKv, plan, touched};
use sqlx::MySqlPool;
use std::collections::HashMap;

/// How many times a commit runs again after losing a deadlock.
const COMMIT_ATTEMPTS: usize = 5;

/// The wall clock as the table stores it, and as [`plan`] takes it.
fn now() -> (i64, u64) {
    let now = now_millis();
    (now, u64::try_from(now).unwrap_or(0))
}

/// A fault of the database (or of reaching the tenant's) as the port reports it.
fn unavailable(err: impl std::fmt::Display) -> KvError {
    KvError::Unavailable(format!("plugin key-value store: {err}"))
}

/// An expiry as stored: Unix milliseconds, saturated into the column's range.
fn expiry_col(at: Option<u64>) -> Option<i64> {
    at.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

/// The scope's live keys and their bytes. `SUM` is a DECIMAL, cast back to an integer.
const LIVE_USAGE: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(LENGTH(k) + LENGTH(v)), 0) AS SIGNED) FROM plugin_kv \
     WHERE plugin = ? AND (expires_at IS NULL OR expires_at > ?)";

const LIVE_VALUE: &str =
    "SELECT v FROM plugin_kv WHERE plugin = ? AND k = ? AND (expires_at IS NULL OR expires_at > ?)";

const LOCK_SCOPE: &str = "SELECT plugin FROM plugin_kv_scopes WHERE plugin = ? FOR UPDATE";

fn usage_of((keys, bytes): (i64, i64)) -> KvUsage {
    KvUsage { keys: u64::try_from(keys).unwrap_or(0), bytes: u64::try_from(bytes).unwrap_or(0) }
}

/// One commit in one transaction: `Err` for a database failure (a deadlock among them, to run again), `Ok` with
/// what the port answers otherwise.
async fn try_commit(
    pool: &MySqlPool,
    plugin: &str,
    ops: &[KvOp],
    quota: &KvQuota,
) -> Result<Result<(), KvError>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // The usual case locks the existing row at once. The first commit of a scope creates it; two such racing may
    // deadlock on the gap they both locked, and the loser runs again and finds the row.
    let locked: Option<String> = sqlx::query_scalar(LOCK_SCOPE).bind(plugin).fetch_optional(&mut *tx).await?;
    if locked.is_none() {
        sqlx::query("INSERT IGNORE INTO plugin_kv_scopes (plugin) VALUES (?)").bind(plugin).execute(&mut *tx).await?;
        sqlx::query_scalar::<_, String>(LOCK_SCOPE).bind(plugin).fetch_one(&mut *tx).await?;
    }
    let (now_col, now) = now();
    sqlx::query("DELETE FROM plugin_kv WHERE plugin = ? AND expires_at <= ?")
        .bind(plugin)
        .bind(now_col)
        .execute(&mut *tx)
        .await?;
    let before: (i64, i64) = sqlx::query_as(LIVE_USAGE).bind(plugin).bind(now_col).fetch_one(&mut *tx).await?;
    let mut stored = HashMap::new();
    for key in touched(ops) {
        let value: Option<Vec<u8>> =
            sqlx::query_scalar(LIVE_VALUE).bind(plugin).bind(key).bind(now_col).fetch_optional(&mut *tx).await?;
        if let Some(value) = value {
            stored.insert(key.to_owned(), value);
        }
    }
    // Dropping `tx` without a commit rolls back: a refused batch writes nothing.
    let writes = match plan(ops, &stored, usage_of(before), quota, now) {
        Ok(writes) => writes,
        Err(refused) => return Ok(Err(refused)),
    };
    for write in writes {
        match write {
            KvWrite::Put { key, value, expires_at } => sqlx::query(
                "INSERT INTO plugin_kv (plugin, k, v, expires_at) VALUES (?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE v = VALUES(v), expires_at = VALUES(expires_at)",
            )
            .bind(plugin)
            .bind(key)
            .bind(value)
            .bind(expiry_col(expires_at)),
            KvWrite::Remove { key } => {
                sqlx::query("DELETE FROM plugin_kv WHERE plugin = ? AND k = ?").bind(plugin).bind(key)
            }
        }
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(Ok(()))
}

#[async_trait::async_trait]
impl PluginKv for MysqlStore {
    #[tracing::instrument(name = "palaver.store.kv_get", skip_all, fields(tenant = %scope.tenant))]
    async fn get(&self, scope: KvScope<'_>, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let db = self.db(scope.tenant).await.map_err(unavailable)?;
        sqlx::query_scalar(LIVE_VALUE)
            .bind(scope.plugin)
            .bind(key)
            .bind(now().0)
            .fetch_optional(&db.pool)
            .await
            .map_err(unavailable)
    }

    #[tracing::instrument(name = "palaver.store.kv_usage", skip_all, fields(tenant = %scope.tenant))]
    async fn usage(&self, scope: KvScope<'_>) -> Result<KvUsage, KvError> {
        let db = self.db(scope.tenant).await.map_err(unavailable)?;
        let row: (i64, i64) = sqlx::query_as(LIVE_USAGE)
            .bind(scope.plugin)
            .bind(now().0)
            .fetch_one(&db.pool)
            .await
            .map_err(unavailable)?;
        Ok(usage_of(row))
    }

    #[tracing::instrument(name = "palaver.store.kv_commit", skip_all, fields(tenant = %scope.tenant))]
    async fn commit(&self, scope: KvScope<'_>, ops: &[KvOp], quota: &KvQuota) -> Result<(), KvError> {
        if ops.is_empty() {
            return Ok(());
        }
        let db = self.db(scope.tenant).await.map_err(unavailable)?;
        let mut attempt = 1;
        loop {
            match try_commit(&db.pool, scope.plugin, ops, quota).await {
                Ok(answer) => return answer,
                Err(err) if is_deadlock(&err) && attempt < COMMIT_ATTEMPTS => attempt += 1,
                Err(err) => return Err(unavailable(err)),
            }
        }
    }
}
