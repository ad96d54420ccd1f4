//! Moving an embedded queue from one file to another: the records and the groups' committed offsets of a queue
//! that lived in the store's own file, taken over by the queue's own file on the first start after the move.
//!
//! Ids are kept, so every group's committed offset still points at the same record and nothing is delivered
//! twice or skipped. The copy is one transaction on the new file; the old rows are deleted only after it
//! commits, so a crash in between leaves the records in both files, never in neither (the next start then sees a
//! non-empty queue and leaves the old rows alone, with a warning).

use super::SqliteQueue;
use crate::SqliteStore;
use crate::error::db_error;
use palaver_core::StoreResult;
use sqlx::Row;

/// Records copied per read from the old file.
const CHUNK: i64 = 500;

/// What [`SqliteQueue::adopt`] moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Adopted {
    pub records: u64,
    pub offsets: u64,
}

impl SqliteQueue {
    /// Moves the queue held in `old`'s file (records and committed offsets) into this queue's file, when this one
    /// is still empty; a no-op when `old` holds none. Run before any consumer subscribes.
    pub async fn adopt(&self, old: &SqliteStore) -> StoreResult<Adopted> {
        let count = |sql: &'static str, store: &SqliteStore| {
            let pool = store.writer.clone();
            async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.map_err(db_error) }
        };
        let records = "SELECT COUNT(*) FROM queue_records";
        let offsets = "SELECT COUNT(*) FROM queue_offsets";
        if count(records, old).await? == 0 && count(offsets, old).await? == 0 {
            return Ok(Adopted::default());
        }
        if count(records, &self.store).await? > 0 || count(offsets, &self.store).await? > 0 {
            tracing::warn!(
                "the store's file still holds embedded-queue records, but the queue's own file is not empty: \
                 they are left where they are"
            );
            return Ok(Adopted::default());
        }
        let mut moved = Adopted::default();
        let mut tx = self.store.writer.begin().await.map_err(db_error)?;
        let mut after = 0i64;
        loop {
            let rows = sqlx::query(
                "SELECT id, topic, msg_key, headers, payload, created_at FROM queue_records WHERE id > ? \
                 ORDER BY id LIMIT ?",
            )
            .bind(after)
            .bind(CHUNK)
            .fetch_all(&old.writer)
            .await
            .map_err(db_error)?;
            let Some(last) = rows.last() else { break };
            after = last.get::<i64, _>(0);
            for row in &rows {
                sqlx::query(
                    "INSERT INTO queue_records (id, topic, msg_key, headers, payload, created_at) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(row.get::<i64, _>(0))
                .bind(row.get::<String, _>(1))
                .bind(row.get::<String, _>(2))
                .bind(row.get::<String, _>(3))
                .bind(row.get::<Vec<u8>, _>(4))
                .bind(row.get::<i64, _>(5))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
                moved.records += 1;
            }
        }
        let groups = sqlx::query("SELECT group_id, topic, next FROM queue_offsets")
            .fetch_all(&old.writer)
            .await
            .map_err(db_error)?;
        for row in &groups {
            sqlx::query("INSERT INTO queue_offsets (group_id, topic, next) VALUES (?, ?, ?)")
                .bind(row.get::<String, _>(0))
                .bind(row.get::<String, _>(1))
                .bind(row.get::<i64, _>(2))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            moved.offsets += 1;
        }
        tx.commit().await.map_err(db_error)?;
        // Only now: until the copy is committed the old file is the queue.
        for sql in ["DELETE FROM queue_records", "DELETE FROM queue_offsets"] {
            sqlx::query(sql).execute(&old.writer).await.map_err(db_error)?;
        }
        Ok(moved)
    }
}
