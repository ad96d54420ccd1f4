//! The plugin choice port over SQLite: the `plugin_choices` table of migration 0019, one row per (tenant, plugin).
//!
//! A put runs in one `BEGIN IMMEDIATE` transaction on the single writer: it reads `MAX(version) + 1` and upserts
//! the row under it. SQLite has one writer at a time, so puts take their versions and commit one after another, in
//! version order; a reader (a snapshot of what was committed) that has seen version `n` has seen every version
//! below it, and never later finds a new choice below `n`.

use crate::SqliteStore;
use crate::codec::{limit_col, tenant};
use crate::error::db_error;
use palaver_core::ports::{PluginChoice, PluginChoiceStore};
use palaver_core::{StoreError, StoreResult, TenantId};
use serde_json::Value;

#[async_trait::async_trait]
impl PluginChoiceStore for SqliteStore {
    async fn put_plugin_choice(&self, tenant_id: TenantId, plugin: &str, choice: &Value) -> StoreResult<i64> {
        let text = serde_json::to_string(choice).map_err(|e| StoreError::Internal(format!("plugin choice: {e}")))?;
        // Dropping `tx` without a commit rolls back.
        let mut tx = self.begin_write().await?;
        // The write lock is held from BEGIN IMMEDIATE, so no other put can take this version or commit before us.
        let version: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) + 1 FROM plugin_choices")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO plugin_choices (tenant_id, plugin, choice, version) VALUES (?, ?, ?, ?) \
             ON CONFLICT (tenant_id, plugin) DO UPDATE SET choice = excluded.choice, version = excluded.version",
        )
        .bind(tenant(tenant_id))
        .bind(plugin)
        .bind(text)
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    async fn plugin_choices_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginChoice>> {
        let rows: Vec<(i64, String, String, i64)> = sqlx::query_as(
            "SELECT tenant_id, plugin, choice, version FROM plugin_choices WHERE version > ? ORDER BY version LIMIT ?",
        )
        .bind(after)
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|(t, plugin, choice, version)| {
                let choice = serde_json::from_str(&choice).map_err(|e| {
                    StoreError::Internal(format!("plugin_choices row {version} holds invalid JSON: {e}"))
                })?;
                // Tenant ids are stored reinterpreted as signed, so they come back unchanged.
                Ok(PluginChoice { tenant: TenantId(t as u64), plugin, choice, version })
            })
            .collect()
    }
}
