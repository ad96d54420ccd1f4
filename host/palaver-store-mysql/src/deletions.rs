//! Message deletion over a tenant database: the `dellog` table, hard-delete stubs, and the per-reader view of the
//! log.

use crate::codec::user_col;
use crate::error::db_error;
use crate::table::Table;
use palaver_core::{DeleteMessages, Deletions, StoreError, StoreResult, UserId};
use palaver_store_sql::columns::EVERYONE;
use palaver_store_sql::dellog::{DellogColumns, deletions_of, dellog_ranges, soft_deleter_col};
use sqlx::MySqlPool;

/// Allocates the topic's next deletion id and records the ranges under it, in one transaction. A hard delete
/// also drops the messages' content; a soft delete also moves the requester's subscription to the new id.
pub(crate) async fn delete(pool: &MySqlPool, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    // Raising del_id locks the topic row first, the lock order every writer of history keeps (see `append`).
    let done = sqlx::query("UPDATE topics SET del_id = del_id + 1 WHERE name = ?")
        .bind(topic)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    let del_id: i64 = sqlx::query_scalar("SELECT del_id FROM topics WHERE name = ?")
        .bind(topic)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
    let insert = "INSERT INTO dellog (topic, del_id, deleted_for, low, hi, created_at) VALUES (?, ?, ?, ?, ?, ?)";
    for range in dellog_ranges(request) {
        let row = palaver_store_sql::bind_dellog!(sqlx::query(insert).bind(topic), del_id, request, range);
        row.execute(&mut *tx).await.map_err(db_error)?;
        if request.hard {
            let recalled_by = request.recalled_by.map(user_col);
            sqlx::query(Table::of(topic).hard_delete_sql())
                .bind(request.when)
                .bind(request.when)
                .bind(recalled_by)
                .bind(recalled_by)
                .bind(recalled_by)
                .bind(request.when)
                .bind(topic)
                .bind(range.low)
                .bind(range.hi)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
    }
    if let Some(reader) = soft_deleter_col(request) {
        let sql = "UPDATE subscriptions SET del_id = ? WHERE topic = ? AND user_id = ?";
        sqlx::query(sql).bind(del_id).bind(topic).bind(reader).execute(&mut *tx).await.map_err(db_error)?;
    }
    tx.commit().await.map_err(db_error)?;
    Ok(del_id)
}

/// The ranges deleted for everyone plus those `reader` deleted, merged, under the highest of their ids.
pub(crate) async fn list(pool: &MySqlPool, topic: &str, reader: UserId) -> StoreResult<Deletions> {
    let rows: Vec<DellogColumns> =
        sqlx::query_as("SELECT del_id, low, hi FROM dellog WHERE topic = ? AND deleted_for IN (?, ?)")
            .bind(topic)
            .bind(EVERYONE)
            .bind(user_col(reader))
            .fetch_all(pool)
            .await
            .map_err(db_error)?;
    Ok(deletions_of(rows))
}
