//! Message deletion over SQLite: the `dellog` table, hard-delete stubs, and the per-reader view of the log.

use crate::SqliteStore;
use crate::codec::{tenant, user_col};
use crate::error::db_error;
use crate::messages::Table;
use palaver_core::{DeleteMessages, Deletions, StoreError, StoreResult, TenantId, UserId};
use palaver_store_sql::columns::EVERYONE;
use palaver_store_sql::dellog::{DellogColumns, deletions_of, dellog_ranges, soft_deleter_col};

/// Allocates the topic's next deletion id and records the ranges under it, in one transaction. A hard delete
/// also drops the messages' content; a soft delete also moves the requester's subscription to the new id.
pub(crate) async fn delete(
    store: &SqliteStore,
    tenant_id: TenantId,
    topic: &str,
    request: &DeleteMessages,
) -> StoreResult<i64> {
    let t = tenant(tenant_id);
    let mut tx = store.begin_write().await?;
    let del_id: Option<i64> =
        sqlx::query_scalar("UPDATE topics SET del_id = del_id + 1 WHERE tenant_id = ? AND name = ? RETURNING del_id")
            .bind(t)
            .bind(topic)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
    let del_id = del_id.ok_or(StoreError::NotFound)?;
    let insert = "INSERT INTO dellog (tenant_id, topic, del_id, deleted_for, low, hi, created_at) \
                  VALUES (?, ?, ?, ?, ?, ?, ?)";
    for range in dellog_ranges(request) {
        let row = palaver_store_sql::bind_dellog!(sqlx::query(insert).bind(t).bind(topic), del_id, request, range);
        row.execute(&mut *tx).await.map_err(db_error)?;
        if request.hard {
            sqlx::query(Table::of(topic).hard_delete_sql())
                .bind(request.when)
                .bind(t)
                .bind(topic)
                .bind(range.low)
                .bind(range.hi)
                .bind(request.recalled_by.map(palaver_store_sql::columns::user_col))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
    }
    if let Some(reader) = soft_deleter_col(request) {
        let sql = "UPDATE subscriptions SET del_id = ? WHERE tenant_id = ? AND topic = ? AND user_id = ?";
        sqlx::query(sql).bind(del_id).bind(t).bind(topic).bind(reader).execute(&mut *tx).await.map_err(db_error)?;
    }
    tx.commit().await.map_err(db_error)?;
    Ok(del_id)
}

/// The ranges deleted for everyone plus those `reader` deleted, merged, under the highest of their ids.
pub(crate) async fn list(
    store: &SqliteStore,
    tenant_id: TenantId,
    topic: &str,
    reader: UserId,
) -> StoreResult<Deletions> {
    let rows: Vec<DellogColumns> = sqlx::query_as(
        "SELECT del_id, low, hi FROM dellog WHERE tenant_id = ? AND topic = ? AND deleted_for IN (?, ?)",
    )
    .bind(tenant(tenant_id))
    .bind(topic)
    .bind(EVERYONE)
    .bind(user_col(reader))
    .fetch_all(&store.pool)
    .await
    .map_err(db_error)?;
    Ok(deletions_of(rows))
}
