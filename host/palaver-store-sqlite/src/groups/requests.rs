//! Join requests for the SQLite group port: creating one idempotently, finding the pending one, deciding it at
//! most once, and listing a group's requests. Each call names its group as `(tenant column, topic)`.
//!
//! Creation and decisions run in one `BEGIN IMMEDIATE` transaction on the single writer, so the pending request
//! they read is still the current one when they write; the partial unique index on pending requests backs the
//! idempotent creation up in the schema.

use crate::SqliteStore;
use crate::codec::{limit_col, user_col};
use crate::error::db_error;
use palaver_core::ports::{JoinDecision, JoinOutcome, JoinRequest, RequestStatus};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{JoinRequestColumns, join_request_of};
use palaver_store_sql::writes::still_pending;

/// The columns of a [`JoinRequestColumns`] row, in its order, as a literal so that `concat!` can splice it into static SQL.
macro_rules! request_columns {
    () => {
        "id, topic, user_id, inviter, message, status, handled_by, handled_at, created_at"
    };
}

/// The pending request of `user` for the group, read through `executor`.
async fn find_pending<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    (t, topic): (i64, &str),
    user: UserId,
) -> StoreResult<Option<JoinRequest>> {
    let sql = concat!(
        "SELECT ",
        request_columns!(),
        " FROM group_join_requests WHERE tenant_id = ? AND topic = ? AND user_id = ? AND status = 'pending'"
    );
    let row: Option<JoinRequestColumns> = sqlx::query_as(sql)
        .bind(t)
        .bind(topic)
        .bind(user_col(user))
        .fetch_optional(executor)
        .await
        .map_err(db_error)?;
    Ok(row.map(join_request_of).transpose()?)
}

/// Stores a pending request unless one is pending already.
pub(super) async fn create(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    user: UserId,
    inviter: Option<UserId>,
    message: Option<&str>,
    now: UnixMillis,
) -> StoreResult<JoinOutcome> {
    let mut tx = store.begin_write().await?;
    if let Some(existing) = find_pending(&mut *tx, (t, topic), user).await? {
        return Ok(JoinOutcome::AlreadyPending(existing));
    }
    let done = sqlx::query(
        "INSERT INTO group_join_requests (tenant_id, topic, user_id, inviter, message, status, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)",
    )
    .bind(t)
    .bind(topic)
    .bind(user_col(user))
    .bind(inviter.map(user_col))
    .bind(message)
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    Ok(JoinOutcome::Created(JoinRequest::pending(done.last_insert_rowid(), topic, user, inviter, message, now)))
}

/// The pending request of `user` for the group, if any.
pub(super) async fn pending(store: &SqliteStore, group: (i64, &str), user: UserId) -> StoreResult<Option<JoinRequest>> {
    find_pending(&store.pool, group, user).await
}

/// Decides a pending request of the group and returns it as it now is.
pub(super) async fn decide(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    id: i64,
    by: UserId,
    decision: JoinDecision,
    now: UnixMillis,
) -> StoreResult<JoinRequest> {
    let mut tx = store.begin_write().await?;
    let sql = concat!(
        "SELECT ",
        request_columns!(),
        " FROM group_join_requests WHERE tenant_id = ? AND topic = ? AND id = ?"
    );
    let row: Option<JoinRequestColumns> =
        sqlx::query_as(sql).bind(t).bind(topic).bind(id).fetch_optional(&mut *tx).await.map_err(db_error)?;
    let decided = join_request_of(row.ok_or(StoreError::NotFound)?)?.decide(by, decision, now)?;
    // The writer is held since BEGIN IMMEDIATE, so the status read above is still current; the guard in the WHERE
    // clause only keeps the statement honest should that ever change.
    let done = sqlx::query(
        "UPDATE group_join_requests SET status = ?1, handled_by = ?2, handled_at = ?3, updated_at = ?3 \
         WHERE tenant_id = ?4 AND id = ?5 AND status = 'pending'",
    )
    .bind(decided.status.as_str())
    .bind(user_col(by))
    .bind(now)
    .bind(t)
    .bind(id)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    still_pending(done.rows_affected())?;
    tx.commit().await.map_err(db_error)?;
    Ok(decided)
}

/// The group's requests, optionally in one status, newest first, strictly below `cursor`.
pub(super) async fn list(
    store: &SqliteStore,
    (t, topic): (i64, &str),
    status: Option<RequestStatus>,
    cursor: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<JoinRequest>> {
    let sql = concat!(
        "SELECT ",
        request_columns!(),
        " FROM group_join_requests WHERE tenant_id = ?1 AND topic = ?2 AND (?3 IS NULL OR status = ?3) \
         AND id < ?4 ORDER BY id DESC LIMIT ?5"
    );
    let rows: Vec<JoinRequestColumns> = sqlx::query_as(sql)
        .bind(t)
        .bind(topic)
        .bind(status.map(RequestStatus::as_str))
        .bind(cursor.unwrap_or(i64::MAX))
        .bind(limit_col(limit))
        .fetch_all(&store.pool)
        .await
        .map_err(db_error)?;
    Ok(rows.into_iter().map(join_request_of).collect::<Result<_, _>>()?)
}
