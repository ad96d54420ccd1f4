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
use palaver_store_sql::columns::{RolloutColumns, canary_cols, rollout_of};

/// A `plugin_releases` row without the bytes: name, version, sha256, size, signed by, uploaded at.
type InfoColumns = (String, String, String, i64, Option<String>, UnixMillis);

/// A `plugin_node_reports` row: node, plugin, live, canary, error, revision, at.
type ReportColumns = (String, String, Option<String>, Option<String>, Option<String>, i64, UnixMillis);

#[async_trait::async_trait]
impl PluginReleaseStore for SqliteStore {
    async fn put_plugin_release(&self, release: &PluginRelease) -> StoreResult<bool> {
        let inserted = sqlx::query(
            "INSERT INTO plugin_releases (name, version, sha256, manifest, component, signed_by, uploaded_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name, version) DO NOTHING",
        )
        .bind(&release.name)
        .bind(&release.version)
        .bind(&release.sha256)
        .bind(&release.manifest)
        .bind(&release.component)
        .bind(&release.signed_by)
        .bind(release.uploaded_at)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        if inserted.rows_affected() == 1 {
            return Ok(true);
        }
        // Releases are never updated or deleted, so the row that kept this one out is still there, unchanged.
        let stored: Option<String> =
            sqlx::query_scalar("SELECT sha256 FROM plugin_releases WHERE name = ? AND version = ?")
                .bind(&release.name)
                .bind(&release.version)
                .fetch_optional(&self.writer)
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

    async fn plugin_release(&self, name: &str, version: &str) -> StoreResult<Option<PluginRelease>> {
        let row: Option<(String, String, Vec<u8>, Option<String>, UnixMillis)> = sqlx::query_as(
            "SELECT sha256, manifest, component, signed_by, uploaded_at FROM plugin_releases \
             WHERE name = ? AND version = ?",
        )
        .bind(name)
        .bind(version)
        .fetch_optional(&self.pool)
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

    async fn plugin_releases(&self, name: &str) -> StoreResult<Vec<ReleaseInfo>> {
        // Newest upload first; versions uploaded in the same millisecond by version, highest first.
        let rows: Vec<InfoColumns> = sqlx::query_as(
            "SELECT name, version, sha256, length(component), signed_by, uploaded_at FROM plugin_releases \
             WHERE name = ? ORDER BY uploaded_at DESC, version DESC",
        )
        .bind(name)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(name, version, sha256, size, signed_by, uploaded_at)| ReleaseInfo {
                name,
                version,
                sha256,
                // length() of a BLOB counts its bytes and is never negative.
                size: size.unsigned_abs(),
                signed_by,
                uploaded_at,
            })
            .collect())
    }

    async fn put_plugin_rollout(&self, rollout: &PluginRollout, now: UnixMillis) -> StoreResult<i64> {
        let (canary_version, canary_tenants) = canary_cols(rollout.canary.as_ref());
        // Dropping `tx` without a commit rolls back.
        let mut tx = self.begin_write().await?;
        // The write lock is held from BEGIN IMMEDIATE, so no other put can take this revision or commit before us.
        let revision: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(revision), 0) + 1 FROM plugin_rollouts")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO plugin_rollouts (plugin, live, canary_version, canary_tenants, revision, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (plugin) DO UPDATE SET live = excluded.live, canary_version = excluded.canary_version, \
             canary_tenants = excluded.canary_tenants, revision = excluded.revision, updated_at = excluded.updated_at",
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

    async fn plugin_rollouts_since(&self, after: i64, limit: usize) -> StoreResult<Vec<PluginRollout>> {
        let rows: Vec<RolloutColumns> = sqlx::query_as(
            "SELECT plugin, live, canary_version, canary_tenants, revision, updated_at FROM plugin_rollouts \
             WHERE revision > ? ORDER BY revision LIMIT ?",
        )
        .bind(after)
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|row| rollout_of(row).map_err(StoreError::from)).collect()
    }

    async fn put_node_report(&self, report: &NodeReport) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO plugin_node_reports (node, plugin, live, canary, error, revision, at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (node, plugin) DO UPDATE SET live = excluded.live, canary = excluded.canary, \
             error = excluded.error, revision = excluded.revision, at = excluded.at",
        )
        .bind(&report.node)
        .bind(&report.plugin)
        .bind(&report.live)
        .bind(&report.canary)
        .bind(&report.error)
        .bind(report.revision)
        .bind(report.at)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn node_reports(&self) -> StoreResult<Vec<NodeReport>> {
        let rows: Vec<ReportColumns> = sqlx::query_as(
            "SELECT node, plugin, live, canary, error, revision, at FROM plugin_node_reports ORDER BY plugin, node",
        )
        .fetch_all(&self.pool)
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
