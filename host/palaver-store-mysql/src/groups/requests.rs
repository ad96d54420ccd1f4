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

use crate::codec::{datetime_to_millis, limit_col, millis_to_datetime, user_col, user_of};
use crate::error::{CorruptRow, db_error, is_unique_violation};
use palaver_core::columns::request_status_of;
use palaver_core::ports::{
    JoinDecision, JoinOutcome, JoinRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, RequestStatus,
};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};
use sqlx::MySqlPool;

/// How often a creation retries when its duplicate was decided between the failed insert and the read.
const CREATE_ATTEMPTS: usize = 3;

/// The select list of a [`RequestRow`], as a literal so that `concat!` can splice it into static SQL.
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

/// A `group_join_requests` row as selected by `request_select!`.
#[derive(sqlx::FromRow)]
struct RequestRow {
    id: i64,
    topic: String,
    user_id: i64,
    inviter: Option<i64>,
    message: Option<String>,
    status: String,
    handled_by: Option<i64>,
    handled_ms: Option<i64>,
    created_ms: i64,
}

impl TryFrom<RequestRow> for JoinRequest {
    type Error = CorruptRow;

    fn try_from(r: RequestRow) -> Result<Self, CorruptRow> {
        Ok(JoinRequest {
            id: r.id,
            topic: r.topic,
            user: user_of(r.user_id),
            inviter: r.inviter.map(user_of),
            message: r.message,
            status: request_status_of(&r.status)?,
            handled_by: r.handled_by.map(user_of),
            created: r.created_ms,
            handled: r.handled_ms,
        })
    }
}

/// The status `decision` by `by` moves `request` into, or the `Conflict` that refuses it. Someone cancelling
/// another user's request is refused before a request that is no longer pending, as with friend requests.
fn decided_status(request: &JoinRequest, by: UserId, decision: JoinDecision) -> StoreResult<RequestStatus> {
    let status = match decision {
        JoinDecision::Approve => RequestStatus::Accepted,
        JoinDecision::Reject => RequestStatus::Rejected,
        JoinDecision::Cancel if by != request.user => return Err(StoreError::Conflict(REQUEST_NOT_YOURS.to_owned())),
        JoinDecision::Cancel => RequestStatus::Cancelled,
    };
    if request.status == RequestStatus::Pending {
        Ok(status)
    } else {
        Err(StoreError::Conflict(REQUEST_NOT_PENDING.to_owned()))
    }
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
                return Ok(JoinOutcome::Created(JoinRequest {
                    id: i64::try_from(done.last_insert_id()).map_err(|e| StoreError::Internal(e.to_string()))?,
                    topic: topic.to_owned(),
                    user,
                    inviter,
                    message: message.map(str::to_owned),
                    status: RequestStatus::Pending,
                    handled_by: None,
                    created: now,
                    handled: None,
                }));
            }
            // Only the statement failed; the transaction is still usable for the read.
            Err(err) if is_unique_violation(&err) => {
                let sql = concat!(
                    request_select!(),
                    "WHERE topic = ? AND user_id = ? AND status = 'pending' LOCK IN SHARE MODE"
                );
                let row: Option<RequestRow> = sqlx::query_as(sql)
                    .bind(topic)
                    .bind(user_col(user))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error)?;
                tx.rollback().await.map_err(db_error)?;
                if let Some(row) = row {
                    return Ok(JoinOutcome::AlreadyPending(row.try_into()?));
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
    let row: Option<RequestRow> =
        sqlx::query_as(sql).bind(topic).bind(user_col(user)).fetch_optional(pool).await.map_err(db_error)?;
    Ok(row.map(JoinRequest::try_from).transpose()?)
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
    let row: Option<RequestRow> =
        sqlx::query_as(sql).bind(id).bind(topic).fetch_optional(&mut *tx).await.map_err(db_error)?;
    let request = JoinRequest::try_from(row.ok_or(StoreError::NotFound)?)?;
    let status = decided_status(&request, by, decision)?;
    // The row is locked since the read, so the status guard only keeps the statement honest.
    let done = sqlx::query(concat!(
        "UPDATE group_join_requests SET status = ?, handled_by = ?, handled_at = ",
        millis_to_datetime!(),
        ", updated_at = ",
        millis_to_datetime!(),
        " WHERE id = ? AND status = 'pending'"
    ))
    .bind(status.as_str())
    .bind(user_col(by))
    .bind(now)
    .bind(now)
    .bind(id)
    .execute(&mut *tx)
    .await
    .map_err(db_error)?;
    if done.rows_affected() != 1 {
        return Err(StoreError::Conflict(REQUEST_NOT_PENDING.to_owned()));
    }
    tx.commit().await.map_err(db_error)?;
    Ok(JoinRequest { status, handled_by: Some(by), handled: Some(now), ..request })
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
    let rows: Vec<RequestRow> = sqlx::query_as(sql)
        .bind(topic)
        .bind(status)
        .bind(status)
        .bind(cursor.unwrap_or(i64::MAX))
        .bind(limit_col(limit))
        .fetch_all(pool)
        .await
        .map_err(db_error)?;
    Ok(rows.into_iter().map(JoinRequest::try_from).collect::<Result<_, _>>()?)
}
