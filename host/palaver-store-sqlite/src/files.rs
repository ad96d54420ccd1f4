//! The file record port over SQLite: the `im_files` and `im_group_files` tables of migration 0013. What garbage
//! collection lists and removes is what no reference row names, checked again by the removal itself.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{FileRecord, FileStatus, FileStore};
use palaver_core::{Seq, SeqRange, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{limit_col, user_col};
use palaver_store_sql::files::{FileRow, file_cols, file_of};

const SELECT: &str = "SELECT id, uploader_id, size, mime, name, sha256, status, public, created_at FROM im_files";

#[async_trait::async_trait]
impl FileStore for SqliteStore {
    async fn create_file(&self, tenant_id: TenantId, file: &FileRecord) -> StoreResult<()> {
        let (id, uploader, size, mime, name, sha256, status, public, created) = file_cols(file);
        sqlx::query(
            "INSERT INTO im_files (tenant_id, id, uploader_id, size, mime, name, sha256, status, public, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(tenant(tenant_id))
        .bind(id)
        .bind(uploader)
        .bind(size)
        .bind(mime)
        .bind(name)
        .bind(sha256)
        .bind(status)
        .bind(public)
        .bind(created)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn get_file(&self, tenant_id: TenantId, id: &str) -> StoreResult<Option<FileRecord>> {
        let sql = format!("{SELECT} WHERE tenant_id = ? AND id = ?");
        let row: Option<FileRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant(tenant_id))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(file_of).transpose()?)
    }

    async fn link_files(&self, t: TenantId, topic: &str, seq: Seq, ids: &[String], at: UnixMillis) -> StoreResult<u64> {
        let mut added = 0;
        let mut tx = self.begin_write().await?;
        for id in ids {
            // Only ids with a record: a reference to nothing would keep nothing alive and grant nothing.
            let done = sqlx::query(
                "INSERT OR IGNORE INTO im_group_files (tenant_id, file_id, source_topic, source_seq, created_at) \
                 SELECT tenant_id, id, ?, ?, ? FROM im_files WHERE tenant_id = ? AND id = ?",
            )
            .bind(topic)
            .bind(seq)
            .bind(at)
            .bind(tenant(t))
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            added += done.rows_affected();
        }
        tx.commit().await.map_err(db_error)?;
        Ok(added)
    }

    async fn unlink_files(&self, t: TenantId, topic: &str, ranges: Option<&[SeqRange]>) -> StoreResult<u64> {
        let Some(ranges) = ranges else {
            let done = sqlx::query("DELETE FROM im_group_files WHERE tenant_id = ? AND source_topic = ?")
                .bind(tenant(t))
                .bind(topic)
                .execute(&self.writer)
                .await
                .map_err(db_error)?;
            return Ok(done.rows_affected());
        };
        let mut tx = self.begin_write().await?;
        let mut removed = 0;
        for r in ranges {
            let sql = "DELETE FROM im_group_files WHERE tenant_id = ? AND source_topic = ? \
                       AND source_seq >= ? AND source_seq < ?";
            let done = sqlx::query(sql).bind(tenant(t)).bind(topic).bind(r.low).bind(r.hi);
            removed += done.execute(&mut *tx).await.map_err(db_error)?.rows_affected();
        }
        tx.commit().await.map_err(db_error)?;
        Ok(removed)
    }

    async fn file_topics(&self, tenant_id: TenantId, id: &str, limit: usize) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT source_topic FROM im_group_files WHERE tenant_id = ? AND file_id = ? \
             ORDER BY source_topic LIMIT ?",
        )
        .bind(tenant(tenant_id))
        .bind(id)
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    async fn set_file_public(&self, tenant_id: TenantId, id: &str) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE im_files SET public = 1 WHERE tenant_id = ? AND id = ?")
            .bind(tenant(tenant_id))
            .bind(id)
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn set_file_status(&self, tenant_id: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        self.update_file_status(tenant_id, id, status, "UPDATE im_files SET status = ? WHERE tenant_id = ? AND id = ?")
            .await
    }

    async fn settle_pending_file(&self, tenant_id: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        let sql = "UPDATE im_files SET status = ? WHERE tenant_id = ? AND id = ? AND status = 'pending'";
        self.update_file_status(tenant_id, id, status, sql).await
    }

    async fn count_uploads(&self, tenant_id: TenantId, uploader: UserId, since: UnixMillis) -> StoreResult<u64> {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM im_files WHERE tenant_id = ? AND uploader_id = ? AND created_at >= ?")
                .bind(tenant(tenant_id))
                .bind(user_col(uploader))
                .bind(since)
                .fetch_one(&self.pool)
                .await
                .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn unreferenced_files(&self, t: TenantId, before: UnixMillis, limit: usize) -> StoreResult<Vec<FileRecord>> {
        let sql = format!(
            "{SELECT} f WHERE f.tenant_id = ? AND f.created_at < ? AND f.public = 0 AND NOT EXISTS \
             (SELECT 1 FROM im_group_files g WHERE g.tenant_id = f.tenant_id AND g.file_id = f.id) \
             ORDER BY f.created_at, f.id LIMIT ?"
        );
        let rows: Vec<FileRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant(t))
            .bind(before)
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(file_of).collect::<Result<_, _>>()?)
    }

    async fn delete_unreferenced_file(&self, tenant_id: TenantId, id: &str) -> StoreResult<bool> {
        let done = sqlx::query(
            "DELETE FROM im_files WHERE tenant_id = ? AND id = ? AND public = 0 AND NOT EXISTS \
             (SELECT 1 FROM im_group_files g WHERE g.tenant_id = im_files.tenant_id AND g.file_id = im_files.id)",
        )
        .bind(tenant(tenant_id))
        .bind(id)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }
}

impl SqliteStore {
    /// Runs `sql` (binding status, tenant, id); true when it changed a row. A changed status always changes the
    /// row here (SQLite counts matched rows), so false means no file matched.
    async fn update_file_status(
        &self,
        tenant_id: TenantId,
        id: &str,
        status: FileStatus,
        sql: &'static str,
    ) -> StoreResult<bool> {
        let done = sqlx::query(sql)
            .bind(status.as_str())
            .bind(tenant(tenant_id))
            .bind(id)
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }
}
