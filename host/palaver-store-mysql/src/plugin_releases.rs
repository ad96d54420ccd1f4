//! The plugin release port over the control database: the `plugin_releases`, `plugin_rollouts` and
//! `plugin_node_reports` tables and the one-row `plugin_rollout_revision` sequence of control migration 0003.
//! Releases and rollouts are cluster-wide (one upload reaches every node), so they live next to the plugin choices
//! rather than in a tenant's database.
//!
//! A rollout put runs in one transaction: it bumps the sequence row (`SET v = LAST_INSERT_ID(v + 1)`), reads the
//! new value back with `LAST_INSERT_ID()` on the same connection, upserts the plugin's row under it and commits. The
//! sequence row stays locked until that commit, so the next put cannot take its revision before this one is
//! visible: puts commit in revision order, from any node.

use crate::MysqlStore;
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{NodeReport, PluginRelease, PluginReleaseStore, PluginRollout, ReleaseInfo};
use palaver_core::{StoreError, StoreResult, UnixMillis};
use palaver_store_sql::columns::{RolloutColumns, limit_col, rollout_of};
use palaver_store_sql::plugin_releases::{
    InfoRow, NODE_REPORTS, ROLLOUTS_SINCE, ReleaseRow, ReportRow, SELECT_RELEASE, STORED_SHA256, already_released,
    info_of, release_of, report_of,
};
use palaver_store_sql::{
    bind_node_report, bind_release, bind_rollout, insert_node_report, insert_release, insert_rollout,
};

#[async_trait::async_trait]
impl PluginReleaseStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.put_plugin_release", skip_all, fields(plugin = %release.name))]
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool> {
        // A plain INSERT rather than INSERT IGNORE, which would also turn a too-long value into a warning.
        match bind_release!(sqlx::query(insert_release!()), release).execute(&self.inner.control).await {
            Ok(_) => return Ok(true),
            Err(e) if is_unique_violation(&e) => {}
            Err(e) => return Err(db_error(e)),
        }
        // The key is taken by a committed row (a duplicate-key error waits for the other insert's commit).
        let stored = sqlx::query_scalar(STORED_SHA256).bind(&release.name).bind(&release.version);
        already_released(release, stored.fetch_optional(&self.inner.control).await.map_err(db_error)?)
    }

    #[tracing::instrument(name = "palaver.store.plugin_release", skip_all, fields(plugin = %name))]
    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>> {
        let query = sqlx::query_as(SELECT_RELEASE).bind(name).bind(version);
        let row: Option<ReleaseRow> = query.fetch_optional(&self.inner.control).await.map_err(db_error)?;
        Ok(row.map(|row| release_of(name, version, row)))
    }

    #[tracing::instrument(name = "palaver.store.plugin_releases", skip_all, fields(plugin = %name))]
    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>> {
        // Newest upload first; versions uploaded in the same millisecond by version (binary collation), highest
        // first.
        let rows: Vec<InfoRow> = sqlx::query_as(
            "SELECT name, version, sha256, CAST(LENGTH(component) AS SIGNED), signed_by, uploaded_at \
             FROM plugin_releases WHERE name = ? ORDER BY uploaded_at DESC, version DESC",
        )
        .bind(name)
        .fetch_all(&self.inner.control)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(info_of).collect())
    }

    #[tracing::instrument(name = "palaver.store.put_plugin_rollout", skip_all, fields(plugin = %rollout.plugin))]
    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64> {
        // Dropping `tx` without a commit rolls back, releasing the sequence row.
        let mut tx = self.inner.control.begin().await.map_err(db_error)?;
        // The UPDATE locks the sequence row until commit: a concurrent put waits here, then reads the committed `v`
        // (a locking write reads the latest row, not a snapshot) and takes the next revision only after this put's
        // row is visible. So puts commit in revision order, and a reader that has seen revision `n` never later
        // finds a new rollout below `n`.
        let bumped = sqlx::query("UPDATE plugin_rollout_revision SET v = LAST_INSERT_ID(v + 1) WHERE id = 1")
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if bumped.rows_affected() != 1 {
            // Without the row, LAST_INSERT_ID() would answer some earlier value of this connection.
            return Err(StoreError::Internal("plugin_rollout_revision has no row 1 (control migration 0003)".into()));
        }
        let revision: u64 =
            sqlx::query_scalar("SELECT LAST_INSERT_ID()").fetch_one(&mut *tx).await.map_err(db_error)?;
        let revision = i64::try_from(revision)
            .map_err(|_| StoreError::Internal(format!("plugin rollout revision {revision} out of range")))?;
        let sql = concat!(
            insert_rollout!(),
            " ON DUPLICATE KEY UPDATE live = VALUES(live), canary_version = VALUES(canary_version), \
             canary_tenants = VALUES(canary_tenants), revision = VALUES(revision), updated_at = VALUES(updated_at)"
        );
        bind_rollout!(sqlx::query(sql), rollout, revision, now).execute(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(revision)
    }

    #[tracing::instrument(name = "palaver.store.plugin_rollouts_since", skip_all)]
    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>> {
        let query = sqlx::query_as(ROLLOUTS_SINCE).bind(after).bind(limit_col(limit));
        let rows: Vec<RolloutColumns> = query.fetch_all(&self.inner.control).await.map_err(db_error)?;
        rows.into_iter().map(|row| rollout_of(row).map_err(StoreError::from)).collect()
    }

    #[tracing::instrument(name = "palaver.store.put_node_report", skip_all, fields(plugin = %report.plugin))]
    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()> {
        let sql = concat!(
            insert_node_report!(),
            " ON DUPLICATE KEY UPDATE live = VALUES(live), canary = VALUES(canary), error = VALUES(error), \
             revision = VALUES(revision), at = VALUES(at)"
        );
        bind_node_report!(sqlx::query(sql), report).execute(&self.inner.control).await.map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.node_reports", skip_all)]
    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>> {
        let rows: Vec<ReportRow> =
            sqlx::query_as(NODE_REPORTS).fetch_all(&self.inner.control).await.map_err(db_error)?;
        Ok(rows.into_iter().map(report_of).collect())
    }
}
