//! Friend request rows for the SQLite relation port: the column list, decoding, and settling a pair's pending
//! requests inside a write transaction.

use crate::error::db_error;
use palaver_core::ports::RequestStatus;
use palaver_core::{StoreResult, UnixMillis, UserId};
use palaver_store_sql::columns::user_col;
use sqlx::{Sqlite, Transaction};

/// The columns of a [`FriendRequestRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! request_columns {
    () => {
        "id, from_user, to_user, message, status, created_at, updated_at, handled_at"
    };
}

/// Settles every pending request from `from` to `to` into `status`, inside the caller's transaction.
pub(super) async fn settle(
    tx: &mut Transaction<'static, Sqlite>,
    t: i64,
    from: UserId,
    to: UserId,
    status: RequestStatus,
    now: UnixMillis,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE friend_requests SET status = ?, updated_at = ?, handled_at = ? \
         WHERE tenant_id = ? AND from_user = ? AND to_user = ? AND status = 'pending'",
    )
    .bind(status.as_str())
    .bind(now)
    .bind(now)
    .bind(t)
    .bind(user_col(from))
    .bind(user_col(to))
    .execute(&mut **tx)
    .await
    .map_err(db_error)?;
    Ok(())
}

pub(super) use request_columns;
