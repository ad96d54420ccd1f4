//! The plugin release port over SQLite: the `plugin_releases`, `plugin_rollouts` and `plugin_node_reports` tables of
//! migration 0020 (releases by name and version, one rollout per plugin, one report per node and plugin).
//!
//! A rollout put runs in one `BEGIN IMMEDIATE` transaction on the single writer: it reads `MAX(revision) + 1` and
//! upserts the plugin's row under it. SQLite has one writer at a time, so puts take their revisions and commit one
//! after another, in revision order; a reader (a snapshot of what was committed) that has seen revision `n` has
//! seen every revision below it, and never later finds a new rollout below `n`.

use crate::SqliteStore;
use crate::codec::limit_col;
use crate::error::db_error;
use palaver_core::ports::{NodeReport, PluginRelease, PluginReleaseStore, PluginRollout, ReleaseInfo};
use palaver_core::{StoreError, StoreResult, UnixMillis};
use palaver_store_sql::columns::{RolloutColumns, rollout_of};
use palaver_store_sql::plugin_releases::{
    InfoRow, NODE_REPORTS, ROLLOUTS_SINCE, ReleaseRow, ReportRow, SELECT_RELEASE, STORED_SHA256, already_released,
    info_of, release_of, report_of,
};
use palaver_store_sql::{
    bind_node_report, bind_release, bind_rollout, insert_node_report, insert_release, insert_rollout,
};

#[async_trait::async_trait]
impl PluginReleaseStore for SqliteStore {
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool> {
        let insert = sqlx::query(concat!(insert_release!(), " ON CONFLICT (name, version) DO NOTHING"));
        let inserted = bind_release!(insert, release).execute(&self.writer).await.map_err(db_error)?;
        if inserted.rows_affected() == 1 {
            return Ok(true);
        }
        let stored: Option<String> = sqlx::query_scalar(STORED_SHA256)
            .bind(&release.name)
            .bind(&release.version)
            .fetch_optional(&self.writer)
            .await
            .map_err(db_error)?;
        already_released(release, stored)
    }

    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>> {
        let row: Option<ReleaseRow> = sqlx::query_as(SELECT_RELEASE)
            .bind(name)
            .bind(version)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(|row| release_of(name, version, row)))
    }

    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>> {
        // Newest upload first; versions uploaded in the same millisecond by version, highest first.
        let rows: Vec<InfoRow> = sqlx::query_as(
            "SELECT name, version, sha256, length(component), signed_by, uploaded_at FROM plugin_releases \
             WHERE name = ? ORDER BY uploaded_at DESC, version DESC",
        )
        .bind(name)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(info_of).collect())
    }

    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64> {
        // Dropping `tx` without a commit rolls back.
        let mut tx = self.begin_write().await?;
        // The write lock is held from BEGIN IMMEDIATE, so no other put can take this revision or commit before us.
        let revision: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(revision), 0) + 1 FROM plugin_rollouts")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        let upsert = sqlx::query(concat!(
            insert_rollout!(),
            " ON CONFLICT (plugin) DO UPDATE SET live = excluded.live, canary_version = excluded.canary_version, \
             canary_tenants = excluded.canary_tenants, revision = excluded.revision, updated_at = excluded.updated_at"
        ));
        bind_rollout!(upsert, rollout, revision, now).execute(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(revision)
    }

    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>> {
        let rows: Vec<RolloutColumns> = sqlx::query_as(ROLLOUTS_SINCE)
            .bind(after)
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        rows.into_iter().map(|row| rollout_of(row).map_err(StoreError::from)).collect()
    }

    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()> {
        let upsert = sqlx::query(concat!(
            insert_node_report!(),
            " ON CONFLICT (node, plugin) DO UPDATE SET live = excluded.live, canary = excluded.canary, \
             error = excluded.error, revision = excluded.revision, at = excluded.at"
        ));
        bind_node_report!(upsert, report).execute(&self.writer).await.map_err(db_error)?;
        Ok(())
    }

    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>> {
        let rows: Vec<ReportRow> = sqlx::query_as(NODE_REPORTS).fetch_all(&self.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(report_of).collect())
    }
}
