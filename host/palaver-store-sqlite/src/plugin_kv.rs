//! The plugin key-value port over SQLite: the `plugin_kv` table of migration 0018, one row per (tenant, plugin,
//! key). A commit runs in one `BEGIN IMMEDIATE` transaction, so it holds the database's write lock from its first
//! read: it drops the scope's expired rows, reads the scope's usage and the live values of the keys the batch
//! touches, decides the batch with [`plan`] and applies it, or rolls back having written nothing. Concurrent
//! commits (to any scope) queue on the one writer connection and the busy timeout, so the quota holds.

use crate::SqliteStore;
use crate::codec::{now_millis, tenant};
use palaver_core::ports::{KvError, KvOp, KvQuota, KvScope, KvUsage, KvWrite, PluginKv, plan, touched};
use std::collections::HashMap;

/// The wall clock as the table stores it, and as [`plan`] takes it.
fn now() -> (i64, u64) {
    let now = now_millis();
    (now, u64::try_from(now).unwrap_or(0))
}

/// A database fault as the port reports it.
fn unavailable(err: impl std::fmt::Display) -> KvError {
    KvError::Unavailable(format!("plugin key-value store: {err}"))
}

/// An expiry as stored: Unix milliseconds, saturated into the column's range.
fn expiry_col(at: Option<u64>) -> Option<i64> {
    at.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

const LIVE_USAGE: &str = "SELECT COUNT(*), COALESCE(SUM(length(CAST(key AS BLOB)) + length(value)), 0) FROM plugin_kv \
     WHERE tenant_id = ? AND plugin = ? AND (expires_at IS NULL OR expires_at > ?)";

fn usage_of((keys, bytes): (i64, i64)) -> KvUsage {
    KvUsage { keys: u64::try_from(keys).unwrap_or(0), bytes: u64::try_from(bytes).unwrap_or(0) }
}

#[async_trait::async_trait]
impl PluginKv for SqliteStore {
    async fn get(&self, scope: KvScope<'_>, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        sqlx::query_scalar(
            "SELECT value FROM plugin_kv WHERE tenant_id = ? AND plugin = ? AND key = ? \
             AND (expires_at IS NULL OR expires_at > ?)",
        )
        .bind(tenant(scope.tenant))
        .bind(scope.plugin)
        .bind(key)
        .bind(now().0)
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable)
    }

    async fn usage(&self, scope: KvScope<'_>) -> Result<KvUsage, KvError> {
        let row: (i64, i64) = sqlx::query_as(LIVE_USAGE)
            .bind(tenant(scope.tenant))
            .bind(scope.plugin)
            .bind(now().0)
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(usage_of(row))
    }

    async fn commit(&self, scope: KvScope<'_>, ops: &[KvOp], quota: &KvQuota) -> Result<(), KvError> {
        if ops.is_empty() {
            return Ok(());
        }
        let t = tenant(scope.tenant);
        // Dropping `tx` without a commit rolls back: every early return below writes nothing.
        let mut tx = self.begin_write().await.map_err(unavailable)?;
        let (now_col, now) = now();
        sqlx::query("DELETE FROM plugin_kv WHERE tenant_id = ? AND plugin = ? AND expires_at <= ?")
            .bind(t)
            .bind(scope.plugin)
            .bind(now_col)
            .execute(&mut *tx)
            .await
            .map_err(unavailable)?;
        let before: (i64, i64) = sqlx::query_as(LIVE_USAGE)
            .bind(t)
            .bind(scope.plugin)
            .bind(now_col)
            .fetch_one(&mut *tx)
            .await
            .map_err(unavailable)?;
        let mut stored = HashMap::new();
        for key in touched(ops) {
            let value: Option<Vec<u8>> = sqlx::query_scalar(
                "SELECT value FROM plugin_kv WHERE tenant_id = ? AND plugin = ? AND key = ? \
                 AND (expires_at IS NULL OR expires_at > ?)",
            )
            .bind(t)
            .bind(scope.plugin)
            .bind(key)
            .bind(now_col)
            .fetch_optional(&mut *tx)
            .await
            .map_err(unavailable)?;
            if let Some(value) = value {
                stored.insert(key.to_owned(), value);
            }
        }
        for write in plan(ops, &stored, usage_of(before), quota, now)? {
            match write {
                KvWrite::Put { key, value, expires_at } => sqlx::query(
                    "INSERT INTO plugin_kv (tenant_id, plugin, key, value, expires_at) VALUES (?, ?, ?, ?, ?) \
                     ON CONFLICT (tenant_id, plugin, key) DO UPDATE \
                     SET value = excluded.value, expires_at = excluded.expires_at",
                )
                .bind(t)
                .bind(scope.plugin)
                .bind(key)
                .bind(value)
                .bind(expiry_col(expires_at)),
                KvWrite::Remove { key } => {
                    sqlx::query("DELETE FROM plugin_kv WHERE tenant_id = ? AND plugin = ? AND key = ?")
                        .bind(t)
                        .bind(scope.plugin)
                        .bind(key)
                }
            }
            .execute(&mut *tx)
            .await
            .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)
    }
}
