//! The file record port over a tenant database: the `im_files` and `im_group_files` tables of migration 0013,
//! times as UTC `DATETIME(3)` converted in SQL. A reference is inserted from the file's own row, so one to a file
//! that has no record is never stored; a file's references go with it in one transaction.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, millis_to_datetime};
use crate::error::db_error;
use palaver_core::ports::{FileRecord, FileStatus, FileStore};
use palaver_core::{Seq, SeqRange, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{limit_col, user_col};
use palaver_store_sql::files::{FileRow, file_cols, file_of};

macro_rules! select_files {
    () => {
        concat!(
            "SELECT id, uploader_id, size, mime, name, sha256, status, public <> 0, ",
            datetime_to_millis!("created_at"),
            " FROM im_files"
        )
    };
}

impl MysqlStore {
    /// Whether an update found its file: MariaDB counts changed rows, so an update that set what was already
    /// there changed none although the file exists.
    async fn found(&self, tenant: TenantId, id: &str, changed: u64) -> StoreResult<bool> {
        Ok(changed > 0 || self.get_file(tenant, id).await?.is_some())
    }
}

#[async_trait::async_trait]
impl FileStore for MysqlStore {
    async fn create_file(&self, tenant: TenantId, file: &FileRecord) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let (id, uploader, size, mime, name, sha256, status, public, created) = file_cols(file);
        let sql = concat!(
            "INSERT INTO im_files (id, uploader_id, size, mime, name, sha256, status, public, created_at) ",
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ",
            millis_to_datetime!(),
            ")"
        );
        let query = sqlx::query(sql).bind(id).bind(uploader).bind(size).bind(mime).bind(name);
        query.bind(sha256).bind(status).bind(public).bind(created).execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }

    async fn get_file(&self, tenant: TenantId, id: &str) -> StoreResult<Option<FileRecord>> {
        let db = self.db(tenant).await?;
        let row: Option<FileRow> = sqlx::query_as(concat!(select_files!(), " WHERE id = ?"))
            .bind(id)
            .fetch_optional(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(file_of).transpose()?)
    }

    async fn link_files(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        ids: &[String],
        at: UnixMillis,
    ) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let mut added = 0;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        for id in ids {
            let sql = concat!(
                "INSERT IGNORE INTO im_group_files (file_id, source_topic, source_seq, created_at) SELECT id, ?, ?, ",
                millis_to_datetime!(),
                " FROM im_files WHERE id = ?"
            );
            let done = sqlx::query(sql).bind(topic).bind(seq).bind(at).bind(id);
            added += done.execute(&mut *tx).await.map_err(db_error)?.rows_affected();
        }
        tx.commit().await.map_err(db_error)?;
        Ok(added)
    }

    async fn unlink_files(&self, tenant: TenantId, topic: &str, ranges: Option<&[SeqRange]>) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let Some(ranges) = ranges else {
            let done = sqlx::query("DELETE FROM im_group_files WHERE source_topic = ?").bind(topic);
            return Ok(done.execute(&db.pool).await.map_err(db_error)?.rows_affected());
        };
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let mut removed = 0;
        for r in ranges {
            let sql = "DELETE FROM im_group_files WHERE source_topic = ? AND source_seq >= ? AND source_seq < ?";
            let done = sqlx::query(sql).bind(topic).bind(r.low).bind(r.hi).execute(&mut *tx).await;
            removed += done.map_err(db_error)?.rows_affected();
        }
        tx.commit().await.map_err(db_error)?;
        Ok(removed)
    }

    async fn file_topics(&self, tenant: TenantId, id: &str, limit: usize) -> StoreResult<Vec<String>> {
        let db = self.db(tenant).await?;
        let sql = "SELECT DISTINCT source_topic FROM im_group_files WHERE file_id = ? ORDER BY source_topic LIMIT ?";
        let rows: Vec<(String,)> =
            sqlx::query_as(sql).bind(id).bind(limit_col(limit)).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    async fn set_file_public(&self, tenant: TenantId, id: &str) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let done = sqlx::query("UPDATE im_files SET public = 1 WHERE id = ?").bind(id);
        let changed = done.execute(&db.pool).await.map_err(db_error)?.rows_affected();
        self.found(tenant, id, changed).await
    }

    async fn set_file_status(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let done = sqlx::query("UPDATE im_files SET status = ? WHERE id = ?").bind(status.as_str()).bind(id);
        let changed = done.execute(&db.pool).await.map_err(db_error)?.rows_affected();
        self.found(tenant, id, changed).await
    }

    async fn settle_pending_file(&self, tenant: TenantId, id: &str, status: FileStatus) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let sql = "UPDATE im_files SET status = ? WHERE id = ? AND status = 'pending'";
        let done = sqlx::query(sql).bind(status.as_str()).bind(id).execute(&db.pool).await.map_err(db_error)?;
        // A pending file always changes here (`status` is never `pending`), so no row changed means none matched.
        Ok(done.rows_affected() > 0)
    }

    async fn count_uploads(&self, tenant: TenantId, uploader: UserId, since: UnixMillis) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let sql =
            concat!("SELECT COUNT(*) FROM im_files WHERE uploader_id = ? AND created_at >= ", millis_to_datetime!());
        let (n,): (i64,) =
            sqlx::query_as(sql).bind(user_col(uploader)).bind(since).fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn unreferenced_files(
        &self,
        tenant: TenantId,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<FileRecord>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            select_files!(),
            " f WHERE f.public = 0 AND f.created_at < ",
            millis_to_datetime!(),
            " AND NOT EXISTS (SELECT 1 FROM im_group_files g WHERE g.file_id = f.id) ORDER BY f.created_at, f.id LIMIT ?"
        );
        let rows: Vec<FileRow> =
            sqlx::query_as(sql).bind(before).bind(limit_col(limit)).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(file_of).collect::<Result<_, _>>()?)
    }

    async fn delete_unreferenced_file(&self, tenant: TenantId, id: &str) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let sql = "DELETE FROM im_files WHERE id = ? AND public = 0 \
                   AND NOT EXISTS (SELECT 1 FROM im_group_files g WHERE g.file_id = im_files.id)";
        let done = sqlx::query(sql).bind(id).execute(&db.pool).await.map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }
}
