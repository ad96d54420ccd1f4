//! Friend request rows for the SQLite relation port: the column list, decoding, and settling a pair's pending
//! requests inside a write transaction.

use crate::codec::user_of;
use crate::error::{CorruptRow, db_error};
use palaver_core::columns::{request_status_of, user_col};
use palaver_core::ports::{FriendRequest, RequestStatus};
use palaver_core::{StoreResult, UnixMillis, UserId};
use sqlx::{Sqlite, Transaction};

/// The columns of a [`RequestRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! request_columns {
    () => {
        "id, from_user, to_user, message, status, created_at, updated_at, handled_at"
    };
}

/// A `friend_requests` row as selected by `request_columns!`.
#[derive(sqlx::FromRow)]
pub(super) struct RequestRow {
    id: i64,
    from_user: i64,
    to_user: i64,
    message: Option<String>,
    status: String,
    created_at: i64,
    updated_at: i64,
    handled_at: Option<i64>,
}

impl TryFrom<RequestRow> for FriendRequest {
    type Error = CorruptRow;

    fn try_from(r: RequestRow) -> Result<Self, CorruptRow> {
        Ok(FriendRequest {
            id: r.id,
            from: user_of(r.from_user),
            to: user_of(r.to_user),
            message: r.message,
            status: request_status_of(&r.status)?,
            created: r.created_at,
            updated: r.updated_at,
            handled: r.handled_at,
        })
    }
}

/// Decodes a list of rows, failing on the first corrupt one.
pub(super) fn decode(rows: Vec<RequestRow>) -> StoreResult<Vec<FriendRequest>> {
    Ok(rows.into_iter().map(FriendRequest::try_from).collect::<Result<_, _>>()?)
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
