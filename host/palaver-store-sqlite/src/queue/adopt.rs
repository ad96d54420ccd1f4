//! Moving an embedded queue from one file to another: the records, the groups' committed offsets and the id
//! sequence of a queue that lived in the store's own file, taken over by the queue's own file on the first start
//! after the move.
//!
//! Ids are kept and the sequence carried over, so every group's committed offset still points at the same record,
//! and a record produced afterwards gets an id above every offset: nothing is delivered twice or skipped. Both
//! files are held with their write locks for the whole move (the old one first, so two processes moving at once
//! queue on it and the second finds nothing left), and nothing can be written to the old queue in between. The
//! new file commits first and the old rows go after, so a crash in between leaves the records in both files,
//! never in neither (the next start then finds the new file in use and leaves the old rows, with a warning).

use super::SqliteQueue;
use crate::SqliteStore;
use crate::error::db_error;
use palaver_core::StoreResult;
use sqlx::{Row, Sqlite, Transaction};

/// Records copied per statement: six parameters each, well under SQLite's 32766.
const CHUNK: usize = 500;

/// What [`SqliteQueue::adopt`] moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Adopted {
    pub records: u64,
    pub offsets: u64,
}

/// The queue a file holds: its records and committed offsets (counts), and its id sequence.
struct Held {
    records: i64,
    offsets: i64,
    sequence: i64,
}

async fn held(tx: &mut Transaction<'static, Sqlite>) -> StoreResult<Held> {
    let row = sqlx::query(
        "SELECT COUNT(*), (SELECT COUNT(*) FROM queue_offsets), \
         COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'queue_records'), 0) FROM queue_records",
    )
    .fetch_one(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(Held { records: row.get(0), offsets: row.get(1), sequence: row.get(2) })
}

impl SqliteQueue {
    /// Moves the queue held in `old`'s file (records, committed offsets, id sequence) into this queue's file when
    /// this one is still empty; a no-op when `old` holds none. Run before any consumer subscribes.
    pub async fn adopt(&self, old: &SqliteStore) -> StoreResult<Adopted> {
        let mut from = old.begin_write().await?;
        let there = held(&mut from).await?;
        if there.records == 0 && there.offsets == 0 {
            return Ok(Adopted::default());
        }
        // Checked under the new file's write lock: a second process moving at once waits on the old file's.
        let mut to = self.store.begin_write().await?;
        let here = held(&mut to).await?;
        if here.records > 0 || here.offsets > 0 {
            tracing::warn!(
                records = there.records,
                offsets = there.offsets,
                "the store's file still holds an embedded queue, but the queue's own file already holds one: the \
                 old one is left where it is (if a move was interrupted after its copy, its rows are in both files)"
            );
            return Ok(Adopted::default());
        }
        let mut moved = Adopted::default();
        let mut after = 0i64;
        loop {
            let rows = sqlx::query(
                "SELECT id, topic, msg_key, headers, payload, created_at FROM queue_records WHERE id > ? \
                 ORDER BY id LIMIT ?",
            )
            .bind(after)
            .bind(CHUNK as i64)
            .fetch_all(&mut *from)
            .await
            .map_err(db_error)?;
            let Some(last) = rows.last() else { break };
            after = last.get::<i64, _>(0);
            let mut sql =
                String::from("INSERT INTO queue_records (id, topic, msg_key, headers, payload, created_at) VALUES ");
            for i in 0..rows.len() {
                sql.push_str(if i == 0 { "(?, ?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?, ?)" });
            }
            // Built from placeholders only: every value is bound.
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for row in &rows {
                insert = insert
                    .bind(row.get::<i64, _>(0))
                    .bind(row.get::<String, _>(1))
                    .bind(row.get::<String, _>(2))
                    .bind(row.get::<String, _>(3))
                    .bind(row.get::<Vec<u8>, _>(4))
                    .bind(row.get::<i64, _>(5));
            }
            insert.execute(&mut *to).await.map_err(db_error)?;
            moved.records += rows.len() as u64;
        }
        let groups = sqlx::query("SELECT group_id, topic, next FROM queue_offsets")
            .fetch_all(&mut *from)
            .await
            .map_err(db_error)?;
        for row in &groups {
            sqlx::query("INSERT INTO queue_offsets (group_id, topic, next) VALUES (?, ?, ?)")
                .bind(row.get::<String, _>(0))
                .bind(row.get::<String, _>(1))
                .bind(row.get::<i64, _>(2))
                .execute(&mut *to)
                .await
                .map_err(db_error)?;
            moved.offsets += 1;
        }
        // The sequence as the old file had it, which may be above the highest record left (pruned, or consumed and
        // pruned): new ids must stay above every committed offset.
        let raised = sqlx::query("UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'queue_records'")
            .bind(there.sequence)
            .execute(&mut *to)
            .await
            .map_err(db_error)?;
        if raised.rows_affected() == 0 {
            sqlx::query("INSERT INTO sqlite_sequence (name, seq) VALUES ('queue_records', ?)")
                .bind(there.sequence)
                .execute(&mut *to)
                .await
                .map_err(db_error)?;
        }
        to.commit().await.map_err(db_error)?;
        // Only now: until the copy is committed the old file is the queue.
        forget(from).await?;
        Ok(moved)
    }
}

/// Deletes the old file's queue (every row was copied under the same write lock) and commits.
async fn forget(mut from: Transaction<'static, Sqlite>) -> StoreResult<()> {
    for sql in ["DELETE FROM queue_records", "DELETE FROM queue_offsets"] {
        sqlx::query(sql).execute(&mut *from).await.map_err(db_error)?;
    }
    from.commit().await.map_err(db_error)
}
