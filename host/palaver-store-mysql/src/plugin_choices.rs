//! The plugin choice port over the control database: the `plugin_choices` table and the one-row
//! `plugin_choice_version` sequence of control migration 0002. Choices are cluster-wide, so they live next to the
//! tenant registry rather than in a tenant's database.
//!
//! A put runs in one transaction: it bumps the sequence row (`SET v = LAST_INSERT_ID(v + 1)`), reads the new value
//! back with `LAST_INSERT_ID()` on the same connection, upserts the (tenant, plugin) row under it and commits. The
//! sequence row stays locked until that commit, so the next put cannot take its version before this one is
//! visible: puts commit in version order, from any node.

use crate::MysqlStore;
use crate::error::db_error;
use palaver_core::ports::{PluginChoice, PluginChoiceStore};
use palaver_core::{StoreError, StoreResult, TenantId};
use palaver_store_sql::columns::limit_col;
use serde_json::Value;

#[async_trait::async_trait]
impl PluginChoiceStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.put_plugin_choice", skip_all, fields(tenant = %tenant))]
    async fn put_plugin_choice(&self, tenant: TenantId, plugin: &str, choice: &Value) -> StoreResult<i64> {
        let text = serde_json::to_string(choice).map_err(|e| StoreError::Internal(format!("plugin choice: {e}")))?;
        // Dropping `tx` without a commit rolls back, releasing the sequence row.
        let mut tx = self.inner.control.begin().await.map_err(db_error)?;
        // The UPDATE locks the sequence row until commit: a concurrent put waits here, then reads the committed `v`
        // (a locking write reads the latest row, not a snapshot) and takes the next version only after this put's
        // row is visible. So puts commit in version order, and a reader that has seen version `n` never later finds
        // a new choice below `n`.
        let bumped = sqlx::query("UPDATE plugin_choice_version SET v = LAST_INSERT_ID(v + 1) WHERE id = 1")
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if bumped.rows_affected() != 1 {
            // Without the row, LAST_INSERT_ID() would answer some earlier value of this connection.
            return Err(StoreError::Internal("plugin_choice_version has no row 1 (control migration 0002)".into()));
        }
        let version: u64 = sqlx::query_scalar("SELECT LAST_INSERT_ID()").fetch_one(&mut *tx).await.map_err(db_error)?;
        let version = i64::try_from(version)
            .map_err(|_| StoreError::Internal(format!("plugin choice version {version} out of range")))?;
        sqlx::query(
            "INSERT INTO plugin_choices (tenant_id, plugin, choice, version) VALUES (?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE choice = VALUES(choice), version = VALUES(version)",
        )
        .bind(tenant.0)
        .bind(plugin)
        .bind(text)
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    #[tracing::instrument(name = "palaver.store.plugin_choices_since", skip_all)]
    async fn plugin_choices_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginChoice>> {
        let rows: Vec<(u64, String, String, i64)> = sqlx::query_as(
            "SELECT tenant_id, plugin, choice, version FROM plugin_choices WHERE version > ? ORDER BY version LIMIT ?",
        )
        .bind(after)
        .bind(limit_col(limit))
        .fetch_all(&self.inner.control)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|(tenant, plugin, choice, version)| {
                let choice = serde_json::from_str(&choice).map_err(|e| {
                    StoreError::Internal(format!("plugin_choices row {version} holds invalid JSON: {e}"))
                })?;
                Ok(PluginChoice { tenant: TenantId(tenant), plugin, choice, version })
            })
            .collect()
    }
}
