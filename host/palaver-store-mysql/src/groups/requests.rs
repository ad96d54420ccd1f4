//! Join requests for the MariaDB group port: the `group_join_requests` table of migration 0004.
//!
//! How the races are closed, as for friend requests:
//!
//! - Two creations of the same request: the unique `pending_key` column lets exactly one insert through; the
//!   other gets a duplicate key and returns the pending request with a locking read (which sees the latest
//!   commit, not the transaction's snapshot). Should that request be decided before it can be read, the
//!   creation starts over.
//! - Two decisions of one request: the row is read `FOR UPDATE`, so the second waits, then reads the first's
//!   outcome and is refused with `Conflict(not pending)`.

use crate::codec::{datetime_to_millis, insert_id, limit_col, millis_to_datetime, user_col};
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{JoinDecision, JoinOutcome, JoinRequest, RequestStatus};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::{JoinRequestColumns, join_request_of};
use palaver_store_sql::writes::still_pending;
use sqlx::MySqlPool;

/// How often a creation retries when its duplicate was decided between the failed insert and the read.
const CREATE_ATTEMPTS: usize = 3;

/// The select list of a [`JoinRequestColumns`] row, in its order, as a literal so that `concat!` can splice it into static SQL.
macro_rules! request_select {
    () => {
        concat!(
            "SELECT id, topic, user_id, inviter, message, status, handled_by, ",
            datetime_to_millis!("handled_at"),
            " AS handled_ms, ",
            datetime_to_millis!("created_at"),
            " AS created_ms FROM group_join_requests "
        )
    };
}

/// Stores a pending request unless one is pending already.
pub(super) async fn create(
    pool: &MySqlPool,
    topic: &str,
    user: UserId,
    inviter: Option<UserId>,
    message: Option<&str>,
    now: UnixMillis,
) -> StoreResult<JoinOutcome> {
    for _ in 0..CREATE_ATTEMPTS {
        let mut tx = pool.begin().await.map_err(db_error)?;
        let inserted = sqlx::query(concat!(
            "INSERT INTO group_join_requests (topic, user_id, inviter, message, status, created_at, updated_at) \
             VALUES (?, ?, ?, ?, 'pending', ",
            millis_to_datetime!(),
            ", ",
            millis_to_datetime!(),
            ")"
        ))
        .bind(topic)
        .bind(user_col(user))
        .bind(inviter.map(user_col))
        .bind(message)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(done) => {
                tx.commit().await.map_err(db_error)?;
                let id = insert_id(&done)?;
                return Ok(JoinOutcome::Created(JoinRequest::pending(id, topic, user, inviter, message, now)));
            }
            // Only the statement failed; the transaction is still usable for the read.
            Err(err) if is_unique_violation(&err) => {
                let sql = concat!(
                    request_select!(),
                    "WHERE topic = ? AND user_id = ? AND status = 'pending' LOCK IN SHARE MODE"
                );
                let row: Option<JoinRequestColumns> = sqlx::query_as(sql)
                    .bind(topic)
                    .bind(user_col(user))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error)?;
                tx.rollback().await.map_err(db_error)?;
                if let Some(row) = row {
                    return Ok(JoinOutcome::AlreadyPending(join_request_of(row)?));
                }
            }
            Err(err) => return Err(db_error(err)),
        }
    }
    Err(StoreError::Unavailable("join request kept changing; try again".to_owned()))
}

/// The pending request of `user` for the group, if any.
pub(super) async fn pending(pool: &MySqlPool, topic: &str, user: UserId) -> StoreResult<Option<JoinRequest>> {
    let sql = concat!(request_select!(), "WHERE topic = ? AND user_id = ? AND status = 'pending'");
    let row: Option<JoinRequestColumns> =
        sqlx::query_as(sql).bind(topic).bind(user_col(user)).fetch_optional(pool).await.map_err(db_error)?;
    Ok(row.map(join_request_of).transpose()?)
}

/// Decides a pending request of the group and returns it as it now is.
pub(super) async fn decide(
    pool: &MySqlPool,
    topic: &str,
    id: i64,
    by: UserId,
    decision: JoinDecision,
    now: UnixMillis,
) -> StoreResult<JoinRequest> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    let sql = concat!(request_select!(), "WHERE id = ? AND topic = ? FOR UPDATE");
    let row: Option<JoinRequestColumns> =
        sqlx::query_as(sql).bind(id).bind(topic).fetch_optional(&mut *tx).await.map_err(db_error)?;
    let decided = join_request_of(row.ok_or(StoreError::NotFound)?)?.decide(by, decision, now)?;
    // The row is locked since the read, so the status guard only keeps the statement honest.
    let sql = concat!(
        "UPDATE group_join_requests SET status = ?, handled_by = ?, handled_at = ",
        millis_to_datetime!(),
        ", updated_at = ",
        millis_to_datetime!(),
        " WHERE id = ? AND status = 'pending'"
    );
    let update = sqlx::query(sql).bind(decided.status.as_str()).bind(user_col(by)).bind(now).bind(now).bind(id);
    still_pending(update.execute(&mut *tx).await.map_err(db_error)?.rows_affected())?;
    tx.commit().await.map_err(db_error)?;
    Ok(decided)
}

/// The group's requests, optionally in one status, newest first, strictly below `cursor`.
pub(super) async fn list(
    pool: &MySqlPool,
    topic: &str,
    status: Option<RequestStatus>,
    cursor: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<JoinRequest>> {
    let sql =
        concat!(request_select!(), "WHERE topic = ? AND (? IS NULL OR status = ?) AND id < ? ORDER BY id DESC LIMIT ?");
    let status = status.map(RequestStatus::as_str);
    let rows: Vec<JoinRequestColumns> = sqlx::query_as(sql)
        .bind(topic)
        .bind(status)
        .bind(status)
        .bind(cursor.unwrap_or(i64::MAX))
        .bind(limit_col(limit))
        .fetch_all(pool)
        .await
        .map_err(db_error)?;
    Ok(rows.into_iter().map(join_request_of).collect::<Result<_, _>>()?)
}
