//! Friend request rows for the MariaDB relation port: the select list, decoding, settling a pair's pending
//! requests, and one attempt at an idempotent creation (see the parent module for how the races are closed).

use crate::codec::{datetime_to_millis, insert_id, millis_to_datetime, user_col};
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{CreateOutcome, FriendRequest, RequestStatus};
use palaver_core::{StoreResult, UnixMillis, UserId};
use palaver_store_sql::rows::FriendRequestRow;
use sqlx::{MySql, Transaction};

/// How often a creation retries when its duplicate was decided between the failed insert and the read.
pub(super) const CREATE_ATTEMPTS: usize = 3;

/// The select list of a [`FriendRequestRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! request_select {
    () => {
        concat!(
            "SELECT id, from_user, to_user, message, status, ",
            datetime_to_millis!("created_at"),
            " AS created_at, ",
            datetime_to_millis!("updated_at"),
            " AS updated_at, ",
            datetime_to_millis!("handled_at"),
            " AS handled_at FROM friend_requests "
        )
    };
}

/// Settles every pending request from `from` to `to` into `status`, inside the caller's transaction.
pub(super) async fn settle(
    tx: &mut Transaction<'static, MySql>,
    from: UserId,
    to: UserId,
    status: RequestStatus,
    now: UnixMillis,
) -> StoreResult<()> {
    sqlx::query(concat!(
        "UPDATE friend_requests SET status = ?, updated_at = ",
        millis_to_datetime!(),
        ", handled_at = ",
        millis_to_datetime!(),
        " WHERE from_user = ? AND to_user = ? AND status = 'pending'"
    ))
    .bind(status.as_str())
    .bind(now)
    .bind(now)
    .bind(user_col(from))
    .bind(user_col(to))
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// One attempt at creating a request, in its own transaction; `None` when the duplicate that refused the insert
/// was decided before it could be read, so the caller tries again.
pub(super) async fn try_create(
    mut tx: Transaction<'static, MySql>,
    from: UserId,
    to: UserId,
    message: Option<&str>,
    now: UnixMillis,
) -> StoreResult<Option<CreateOutcome>> {
    let (f, t) = (user_col(from), user_col(to));
    let blocks: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM user_blocks WHERE (user_id = ? AND blocked_id = ?) OR (user_id = ? AND blocked_id = ?) \
         LOCK IN SHARE MODE",
    )
    .bind(f)
    .bind(t)
    .bind(t)
    .bind(f)
    .fetch_one(&mut *tx)
    .await
    .map_err(db_error)?;
    if blocks > 0 {
        return Ok(Some(CreateOutcome::Blocked));
    }
    let friends: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM friends WHERE user_id = ? AND friend_id = ? LOCK IN SHARE MODE")
            .bind(f)
            .bind(t)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
    if friends > 0 {
        return Ok(Some(CreateOutcome::AlreadyFriends));
    }
    let inserted = sqlx::query(concat!(
        "INSERT INTO friend_requests (from_user, to_user, message, status, created_at, updated_at) \
         VALUES (?, ?, ?, 'pending', ",
        millis_to_datetime!(),
        ", ",
        millis_to_datetime!(),
        ")"
    ))
    .bind(f)
    .bind(t)
    .bind(message)
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(done) => {
            tx.commit().await.map_err(db_error)?;
            Ok(Some(CreateOutcome::Created(FriendRequest::pending(insert_id(&done)?, from, to, message, now))))
        }
        // Only the statement failed; the transaction is still usable for the read.
        Err(err) if is_unique_violation(&err) => {
            let sql = concat!(
                request_select!(),
                "WHERE from_user = ? AND to_user = ? AND status = 'pending' LOCK IN SHARE MODE"
            );
            let row: Option<FriendRequestRow> =
                sqlx::query_as(sql).bind(f).bind(t).fetch_optional(&mut *tx).await.map_err(db_error)?;
            tx.rollback().await.map_err(db_error)?;
            row.map(|r| Ok(CreateOutcome::AlreadyPending(r.try_into()?))).transpose()
        }
        Err(err) => Err(db_error(err)),
    }
}

pub(super) use request_select;
