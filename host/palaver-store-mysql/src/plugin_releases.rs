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
use palaver_store_sql::columns::{RolloutColumns, canary_cols, limit_col, rollout_of};

/// A `plugin_releases` row without the bytes: name, version, sha256, size, signed by, uploaded at.
type InfoColumns = (String, String, String, i64, Option<String>, UnixMillis);

/// A `plugin_node_reports` row: node, plugin, live, canary, error, revision, at.
type ReportColumns = (String, String, Option<String>, Option<String>, Option<String>, i64, UnixMillis);

#[async_trait::async_trait]
impl PluginReleaseStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.put_plugin_release", skip_all, fields(plugin = %release.name))]
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool> {
        // A plain INSERT rather than INSERT IGNORE, which would also turn a too-long value into a warning.
        let inserted = sqlx::query(
            "INSERT INTO plugin_releases (name, version, sha256, manifest, component, signed_by, uploaded_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&release.name)
        .bind(&release.version)
        .bind(&release.sha256)
        .bind(&release.manifest)
        .bind(&release.component)
        .bind(&release.signed_by)
        .bind(release.uploaded_at)
        .execute(&self.inner.control)
        .await;
        match inserted {
            Ok(_) => return Ok(true),
            Err(e) if is_unique_violation(&e) => {}
            Err(e) => return Err(db_error(e)),
        }
        // The key is taken by a committed row (a duplicate-key error waits for the other insert's commit), and
        // releases are never updated or deleted, so this read finds that row as it was stored.
        let stored: Option<String> =
            sqlx::query_scalar("SELECT sha256 FROM plugin_releases WHERE name = ? AND version = ?")
                .bind(&release.name)
                .bind(&release.version)
                .fetch_optional(&self.inner.control)
                .await
                .map_err(db_error)?;
        match stored {
            Some(sha256) if sha256 == release.sha256 => Ok(false),
            Some(sha256) => Err(StoreError::Conflict(format!(
                "plugin {} {} is already released with sha256 {sha256}",
                release.name, release.version
            ))),
            None => Err(StoreError::Internal(format!(
                "plugin_releases refused {} {} but holds no such row",
                release.name, release.version
            ))),
        }
    }

    #[tracing::instrument(name = "palaver.store.plugin_release", skip_all, fields(plugin = %name))]
    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>> {
        let row: Option<(String, String, Vec<u8>, Option<String>, UnixMillis)> = sqlx::query_as(
            "SELECT sha256, manifest, component, signed_by, uploaded_at FROM plugin_releases \
             WHERE name = ? AND version = ?",
        )
        .bind(name)
        .bind(version)
        .fetch_optional(&self.inner.control)
        .await
        .map_err(db_error)?;
        Ok(row.map(|(sha256, manifest, component, signed_by, uploaded_at)| PluginRelease {
            name: name.to_owned(),
            version: version.to_owned(),
            sha256,
            manifest,
            component,
            signed_by,
            uploaded_at,
        }))
    }

    #[tracing::instrument(name = "palaver.store.plugin_releases", skip_all, fields(plugin = %name))]
    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>> {
        // Newest upload first; versions uploaded in the same millisecond by version (binary collation), highest
        // first.
        let rows: Vec<InfoColumns> = sqlx::query_as(
            "SELECT name, version, sha256, CAST(LENGTH(component) AS SIGNED), signed_by, uploaded_at \
             FROM plugin_releases WHERE name = ? ORDER BY uploaded_at DESC, version DESC",
        )
        .bind(name)
        .fetch_all(&self.inner.control)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(name, version, sha256, size, signed_by, uploaded_at)| ReleaseInfo {
                name,
                version,
                sha256,
                // LENGTH() of a BLOB counts its bytes and is never negative.
                size: size.unsigned_abs(),
                signed_by,
                uploaded_at,
            })
            .collect())
    }

    #[tracing::instrument(name = "palaver.store.put_plugin_rollout", skip_all, fields(plugin = %rollout.plugin))]
    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64> {
        let (canary_version, canary_tenants) = canary_cols(rollout.canary.as_ref());
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
        sqlx::query(
            "INSERT INTO plugin_rollouts (plugin, live, canary_version, canary_tenants, revision, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE live = VALUES(live), canary_version = VALUES(canary_version), \
             canary_tenants = VALUES(canary_tenants), revision = VALUES(revision), updated_at = VALUES(updated_at)",
        )
        .bind(&rollout.plugin)
        .bind(&rollout.live)
        .bind(canary_version)
        .bind(canary_tenants)
        .bind(revision)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(revision)
    }

    #[tracing::instrument(name = "palaver.store.plugin_rollouts_since", skip_all)]
    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>> {
        let rows: Vec<RolloutColumns> = sqlx::query_as(
            "SELECT plugin, live, canary_version, canary_tenants, revision, updated_at FROM plugin_rollouts \
             WHERE revision > ? ORDER BY revision LIMIT ?",
        )
        .bind(after)
        .bind(limit_col(limit))
        .fetch_all(&self.inner.control)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|row| rollout_of(row).map_err(StoreError::from)).collect()
    }

    #[tracing::instrument(name = "palaver.store.put_node_report", skip_all, fields(plugin = %report.plugin))]
    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO plugin_node_reports (node, plugin, live, canary, error, revision, at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE live = VALUES(live), canary = VALUES(canary), error = VALUES(error), \
             revision = VALUES(revision), at = VALUES(at)",
        )
        .bind(&report.node)
        .bind(&report.plugin)
        .bind(&report.live)
        .bind(&report.canary)
        .bind(&report.error)
        .bind(report.revision)
        .bind(report.at)
        .execute(&self.inner.control)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.node_reports", skip_all)]
    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>> {
        let rows: Vec<ReportColumns> = sqlx::query_as(
            "SELECT node, plugin, live, canary, error, revision, at FROM plugin_node_reports ORDER BY plugin, node",
        )
        .fetch_all(&self.inner.control)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(node, plugin, live, canary, error, revision, at)| NodeReport {
                node,
                plugin,
                live,
                canary,
                error,
                revision,
                at,
            })
            .collect())
    }
}
