//! The relation port over a tenant database: `friend_requests`, `friends` and `user_blocks` (migration 0002),
//! with the pending-pair unique index of migration 0003. Times are UTC `DATETIME(3)`, converted in SQL.
//!
//! How the races are closed, since InnoDB does not serialise transactions the way SQLite's one writer does:
//!
//! - Two creations of the same request: the unique `pending_pair` column lets exactly one insert through; the
//!   other gets a duplicate key and returns the pending request with a locking read (which sees the latest
//!   commit, not the transaction's snapshot).
//! - A creation and a block or an accept: the creation reads `user_blocks` and `friends` with `LOCK IN SHARE
//!   MODE`. If the row is there it waits for it to commit and sees it; if not, its gap lock holds the other
//!   insert back until the creation commits, and the block's or accept's settling `UPDATE` then sees the new
//!   pending request.
//! - Two decisions of one request: the request row is read `FOR UPDATE`, so the second waits, then reads the
//!   first's outcome and is refused with `Conflict(not pending)`.
//!
//! A deadlock InnoDB still detects is `Unavailable` like everywhere in this adapter: nothing was written and the
//! call may be retried.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, limit_col, millis_to_datetime, user_col};
use crate::error::{db_error, is_unique_violation};
use palaver_core::ports::{
    Block, CreateOutcome, Decision, Friend, FriendRequest, Relation, RelationStore, RequestStatus,
};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{FriendColumns, friend_of};
use palaver_store_sql::relations::{BlockRow, block_of, decide, relation_of};
use palaver_store_sql::rows::{FriendRequestRow, decode_all};
use palaver_store_sql::writes::{found, still_pending};

mod requests;

use requests::{CREATE_ATTEMPTS, request_select, settle, try_create};

#[async_trait::async_trait]
impl RelationStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.relation", skip_all, fields(tenant = %tenant))]
    async fn relation(&self, tenant: TenantId, me: UserId, other: UserId) -> StoreResult<Relation> {
        let db = self.db(tenant).await?;
        let (m, o) = (user_col(me), user_col(other));
        let sql = "SELECT EXISTS (SELECT 1 FROM friends WHERE user_id = ? AND friend_id = ?), \
                   EXISTS (SELECT 1 FROM user_blocks WHERE user_id = ? AND blocked_id = ?), \
                   EXISTS (SELECT 1 FROM user_blocks WHERE user_id = ? AND blocked_id = ?)";
        let query = sqlx::query_as(sql).bind(m).bind(o).bind(m).bind(o).bind(o).bind(m);
        let (friends, i_blocked, blocked_me): (i64, i64, i64) = query.fetch_one(&db.pool).await.map_err(db_error)?;
        let sql = concat!(
            request_select!(),
            "WHERE status = 'pending' AND ((from_user = ? AND to_user = ?) OR (from_user = ? AND to_user = ?))"
        );
        let pending: Vec<FriendRequestRow> =
            sqlx::query_as(sql).bind(m).bind(o).bind(o).bind(m).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(relation_of(me, (friends != 0, i_blocked != 0, blocked_me != 0), pending)?)
    }

    #[tracing::instrument(name = "palaver.store.create_request", skip_all, fields(tenant = %tenant))]
    async fn create_request(
        &self,
        tenant: TenantId,
        from: UserId,
        to: UserId,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<CreateOutcome> {
        let db = self.db(tenant).await?;
        for _ in 0..CREATE_ATTEMPTS {
            let tx = db.pool.begin().await.map_err(db_error)?;
            if let Some(outcome) = try_create(tx, from, to, message, now).await? {
                return Ok(outcome);
            }
        }
        Err(StoreError::Unavailable("friend request kept changing; try again".to_owned()))
    }

    #[tracing::instrument(name = "palaver.store.count_requests_since", skip_all, fields(tenant = %tenant))]
    async fn count_requests_since(&self, tenant: TenantId, from: UserId, since: UnixMillis) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT COUNT(*) FROM friend_requests WHERE from_user = ? AND created_at >= ",
            millis_to_datetime!()
        );
        let n: i64 =
            sqlx::query_scalar(sql).bind(user_col(from)).bind(since).fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(n.unsigned_abs())
    }

    #[tracing::instrument(name = "palaver.store.decide_request", skip_all, fields(tenant = %tenant))]
    async fn decide_request(
        &self,
        tenant: TenantId,
        id: i64,
        actor: UserId,
        decision: Decision,
        now: UnixMillis,
    ) -> StoreResult<FriendRequest> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let sql = concat!(request_select!(), "WHERE id = ? FOR UPDATE");
        let row: Option<FriendRequestRow> =
            sqlx::query_as(sql).bind(id).fetch_optional(&mut *tx).await.map_err(db_error)?;
        let decided = decide(row, actor, decision, now)?;
        // The row is locked since the read, so the status guard only keeps the statement honest.
        let sql = concat!(
            "UPDATE friend_requests SET status = ?, updated_at = ",
            millis_to_datetime!(),
            ", handled_at = ",
            millis_to_datetime!(),
            " WHERE id = ? AND status = 'pending'"
        );
        let update = sqlx::query(sql).bind(decided.status.as_str()).bind(now).bind(now).bind(id);
        still_pending(update.execute(&mut *tx).await.map_err(db_error)?.rows_affected())?;
        if decision == Decision::Accept {
            // IGNORE keeps a direction that exists already (and its remark); the values cannot be truncated.
            sqlx::query(concat!(
                "INSERT IGNORE INTO friends (user_id, friend_id, source, created_at, updated_at) VALUES (?, ?, 'request', ",
                millis_to_datetime!(),
                ", ",
                millis_to_datetime!(),
                "), (?, ?, 'request', ",
                millis_to_datetime!(),
                ", ",
                millis_to_datetime!(),
                ")"
            ))
            .bind(user_col(decided.from))
            .bind(user_col(decided.to))
            .bind(now)
            .bind(now)
            .bind(user_col(decided.to))
            .bind(user_col(decided.from))
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            settle(&mut tx, decided.to, decided.from, RequestStatus::Accepted, now).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(decided)
    }

    #[tracing::instrument(name = "palaver.store.list_requests", skip_all, fields(tenant = %tenant))]
    async fn list_requests(
        &self,
        tenant: TenantId,
        user: UserId,
        incoming: bool,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FriendRequest>> {
        let db = self.db(tenant).await?;
        // Two static statements rather than a spliced column name, one per index.
        let sql = if incoming {
            concat!(
                request_select!(),
                "WHERE to_user = ? AND (? IS NULL OR status = ?) AND id < ? ORDER BY id DESC LIMIT ?"
            )
        } else {
            concat!(
                request_select!(),
                "WHERE from_user = ? AND (? IS NULL OR status = ?) AND id < ? ORDER BY id DESC LIMIT ?"
            )
        };
        let status = status.map(RequestStatus::as_str);
        let query = sqlx::query_as(sql).bind(user_col(user)).bind(status).bind(status);
        let query = query.bind(cursor.unwrap_or(i64::MAX)).bind(limit_col(limit));
        let rows: Vec<FriendRequestRow> = query.fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.list_friends", skip_all, fields(tenant = %tenant))]
    async fn list_friends(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Friend>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT friend_id, remark, ",
            datetime_to_millis!("created_at"),
            ", ",
            datetime_to_millis!("updated_at"),
            " FROM friends WHERE user_id = ? AND (? IS NULL OR friend_id > ?) ORDER BY friend_id LIMIT ?"
        );
        let after = cursor.map(user_col);
        let query = sqlx::query_as(sql).bind(user_col(user)).bind(after).bind(after).bind(limit_col(limit));
        let rows: Vec<FriendColumns> = query.fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(|row| friend_of(user, row)).collect())
    }

    #[tracing::instrument(name = "palaver.store.remove_friend", skip_all, fields(tenant = %tenant))]
    async fn remove_friend(&self, tenant: TenantId, user: UserId, friend: UserId) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        // One statement deletes both directions, so no transaction is needed to keep them together.
        let sql = "DELETE FROM friends WHERE (user_id = ? AND friend_id = ?) OR (user_id = ? AND friend_id = ?)";
        let (u, f) = (user_col(user), user_col(friend));
        let done = sqlx::query(sql).bind(u).bind(f).bind(f).bind(u).execute(&db.pool).await.map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.set_remark", skip_all, fields(tenant = %tenant))]
    async fn set_remark(
        &self,
        tenant: TenantId,
        user: UserId,
        friend: UserId,
        remark: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        // The connection reports rows matched, not changed, so setting the same remark again is still found.
        let sql = concat!(
            "UPDATE friends SET remark = ?, updated_at = ",
            millis_to_datetime!(),
            " WHERE user_id = ? AND friend_id = ?"
        );
        let update = sqlx::query(sql).bind(remark).bind(now).bind(user_col(user)).bind(user_col(friend));
        found(update.execute(&db.pool).await.map_err(db_error)?.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.block", skip_all, fields(tenant = %tenant))]
    async fn block(
        &self,
        tenant: TenantId,
        user: UserId,
        blocked: UserId,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        // A plain INSERT rather than INSERT IGNORE, which would also turn a too-long reason into a silent
        // truncation; a duplicate key fails only this statement, and the rollback leaves the old block alone.
        let inserted = sqlx::query(concat!(
            "INSERT INTO user_blocks (user_id, blocked_id, reason, created_at) VALUES (?, ?, ?, ",
            millis_to_datetime!(),
            ")"
        ))
        .bind(user_col(user))
        .bind(user_col(blocked))
        .bind(reason)
        .bind(now)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(err) if is_unique_violation(&err) => {
                tx.rollback().await.map_err(db_error)?;
                return Ok(false);
            }
            Err(err) => return Err(db_error(err)),
        }
        settle(&mut tx, user, blocked, RequestStatus::Cancelled, now).await?;
        settle(&mut tx, blocked, user, RequestStatus::Cancelled, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    #[tracing::instrument(name = "palaver.store.unblock", skip_all, fields(tenant = %tenant))]
    async fn unblock(&self, tenant: TenantId, user: UserId, blocked: UserId) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let delete = sqlx::query("DELETE FROM user_blocks WHERE user_id = ? AND blocked_id = ?");
        let done = delete.bind(user_col(user)).bind(user_col(blocked)).execute(&db.pool).await.map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.list_blocks", skip_all, fields(tenant = %tenant))]
    async fn list_blocks(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Block>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT blocked_id, reason, ",
            datetime_to_millis!("created_at"),
            " FROM user_blocks WHERE user_id = ? AND (? IS NULL OR blocked_id > ?) ORDER BY blocked_id LIMIT ?"
        );
        let after = cursor.map(user_col);
        let query = sqlx::query_as(sql).bind(user_col(user)).bind(after).bind(after).bind(limit_col(limit));
        let rows: Vec<BlockRow> = query.fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(|row| block_of(user, row)).collect())
    }

    #[tracing::instrument(name = "palaver.store.is_blocked", skip_all, fields(tenant = %tenant))]
    async fn is_blocked(&self, tenant: TenantId, by: UserId, whom: UserId) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let query = sqlx::query_scalar("SELECT 1 FROM user_blocks WHERE user_id = ? AND blocked_id = ?");
        let hit: Option<i64> =
            query.bind(user_col(by)).bind(user_col(whom)).fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(hit.is_some())
    }
}
