//! The relation port over SQLite: the `friend_requests`, `friends` and `user_blocks` tables of migration 0002.
//!
//! Every write that checks before it changes runs in one `BEGIN IMMEDIATE` transaction on the single writer
//! connection, so the check and the change see no other writer in between: two racing accepts are decided one
//! after the other, and a request never slips past a block being written. The partial unique index on pending
//! pairs backs the idempotent create up in the schema itself.

use crate::SqliteStore;
use crate::codec::{limit_col, tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::{
    Block, CreateOutcome, Decision, Friend, FriendRequest, Relation, RelationStore, RequestStatus,
};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{FriendColumns, friend_of};
use palaver_store_sql::relations::{BlockRow, block_of, decide, relation_of};
use palaver_store_sql::rows::{FriendRequestRow, decode_all};
use palaver_store_sql::writes::{found, still_pending};

mod requests;

use requests::{request_columns, settle};

#[async_trait::async_trait]
impl RelationStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.relation", skip_all, fields(tenant = %tenant_id))]
    async fn relation(&self, tenant_id: TenantId, me: UserId, other: UserId) -> StoreResult<Relation> {
        let (t, me_col, other_col) = (tenant(tenant_id), user_col(me), user_col(other));
        let (friends, i_blocked, blocked_me): (bool, bool, bool) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM friends WHERE tenant_id = ?1 AND user_id = ?2 AND friend_id = ?3), \
             EXISTS (SELECT 1 FROM user_blocks WHERE tenant_id = ?1 AND user_id = ?2 AND blocked_id = ?3), \
             EXISTS (SELECT 1 FROM user_blocks WHERE tenant_id = ?1 AND user_id = ?3 AND blocked_id = ?2)",
        )
        .bind(t)
        .bind(me_col)
        .bind(other_col)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        let sql = concat!(
            "SELECT ",
            request_columns!(),
            " FROM friend_requests WHERE tenant_id = ?1 AND status = 'pending' \
             AND ((from_user = ?2 AND to_user = ?3) OR (from_user = ?3 AND to_user = ?2))"
        );
        let pending: Vec<FriendRequestRow> =
            sqlx::query_as(sql).bind(t).bind(me_col).bind(other_col).fetch_all(&self.pool).await.map_err(db_error)?;
        Ok(relation_of(me, (friends, i_blocked, blocked_me), pending)?)
    }

    #[tracing::instrument(name = "palaver.store.create_request", skip_all, fields(tenant = %tenant_id))]
    async fn create_request(
        &self,
        tenant_id: TenantId,
        from: UserId,
        to: UserId,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<CreateOutcome> {
        let (t, from_col, to_col) = (tenant(tenant_id), user_col(from), user_col(to));
        let mut tx = self.begin_write().await?;
        let (blocked, friends): (bool, bool) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM user_blocks WHERE tenant_id = ?1 \
             AND ((user_id = ?2 AND blocked_id = ?3) OR (user_id = ?3 AND blocked_id = ?2))), \
             EXISTS (SELECT 1 FROM friends WHERE tenant_id = ?1 AND user_id = ?2 AND friend_id = ?3)",
        )
        .bind(t)
        .bind(from_col)
        .bind(to_col)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        if blocked {
            return Ok(CreateOutcome::Blocked);
        }
        if friends {
            return Ok(CreateOutcome::AlreadyFriends);
        }
        let sql = concat!(
            "SELECT ",
            request_columns!(),
            " FROM friend_requests WHERE tenant_id = ? AND from_user = ? AND to_user = ? AND status = 'pending'"
        );
        let existing: Option<FriendRequestRow> =
            sqlx::query_as(sql).bind(t).bind(from_col).bind(to_col).fetch_optional(&mut *tx).await.map_err(db_error)?;
        if let Some(existing) = existing {
            return Ok(CreateOutcome::AlreadyPending(existing.try_into()?));
        }
        let done = sqlx::query(
            "INSERT INTO friend_requests (tenant_id, from_user, to_user, message, status, created_at, updated_at) \
             VALUES (?, ?, ?, ?, 'pending', ?, ?)",
        )
        .bind(t)
        .bind(from_col)
        .bind(to_col)
        .bind(message)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(CreateOutcome::Created(FriendRequest::pending(done.last_insert_rowid(), from, to, message, now)))
    }

    #[tracing::instrument(name = "palaver.store.count_requests_since", skip_all, fields(tenant = %tenant_id))]
    async fn count_requests_since(&self, tenant_id: TenantId, from: UserId, since: UnixMillis) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM friend_requests WHERE tenant_id = ? AND from_user = ? AND created_at >= ?",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(from))
        .bind(since)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(n.unsigned_abs())
    }

    #[tracing::instrument(name = "palaver.store.decide_request", skip_all, fields(tenant = %tenant_id))]
    async fn decide_request(
        &self,
        tenant_id: TenantId,
        id: i64,
        actor: UserId,
        decision: Decision,
        now: UnixMillis,
    ) -> StoreResult<FriendRequest> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let sql = concat!("SELECT ", request_columns!(), " FROM friend_requests WHERE tenant_id = ? AND id = ?");
        let row: Option<FriendRequestRow> =
            sqlx::query_as(sql).bind(t).bind(id).fetch_optional(&mut *tx).await.map_err(db_error)?;
        let decided = decide(row, actor, decision, now)?;
        // The writer is held since BEGIN IMMEDIATE, so the status read above is still current; the guard in the
        // WHERE clause only keeps the statement honest should that ever change.
        let done = sqlx::query(
            "UPDATE friend_requests SET status = ?, updated_at = ?, handled_at = ? \
             WHERE tenant_id = ? AND id = ? AND status = 'pending'",
        )
        .bind(decided.status.as_str())
        .bind(now)
        .bind(now)
        .bind(t)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        still_pending(done.rows_affected())?;
        if decision == Decision::Accept {
            for (user, friend) in [(decided.from, decided.to), (decided.to, decided.from)] {
                sqlx::query(
                    "INSERT INTO friends (tenant_id, user_id, friend_id, remark, created_at, updated_at) \
                     VALUES (?, ?, ?, NULL, ?, ?) ON CONFLICT DO NOTHING",
                )
                .bind(t)
                .bind(user_col(user))
                .bind(user_col(friend))
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            }
            settle(&mut tx, t, decided.to, decided.from, RequestStatus::Accepted, now).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(decided)
    }

    #[tracing::instrument(name = "palaver.store.list_requests", skip_all, fields(tenant = %tenant_id))]
    async fn list_requests(
        &self,
        tenant_id: TenantId,
        user: UserId,
        incoming: bool,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FriendRequest>> {
        // Two static statements rather than a spliced column name, one per index.
        let sql = if incoming {
            concat!(
                "SELECT ",
                request_columns!(),
                " FROM friend_requests WHERE tenant_id = ?1 AND to_user = ?2 AND (?3 IS NULL OR status = ?3) \
                 AND id < ?4 ORDER BY id DESC LIMIT ?5"
            )
        } else {
            concat!(
                "SELECT ",
                request_columns!(),
                " FROM friend_requests WHERE tenant_id = ?1 AND from_user = ?2 AND (?3 IS NULL OR status = ?3) \
                 AND id < ?4 ORDER BY id DESC LIMIT ?5"
            )
        };
        let rows: Vec<FriendRequestRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .bind(status.map(RequestStatus::as_str))
            .bind(cursor.unwrap_or(i64::MAX))
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.list_friends", skip_all, fields(tenant = %tenant_id))]
    async fn list_friends(
        &self,
        tenant_id: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Friend>> {
        let rows: Vec<FriendColumns> = sqlx::query_as(
            "SELECT friend_id, remark, created_at, updated_at FROM friends \
             WHERE tenant_id = ?1 AND user_id = ?2 AND (?3 IS NULL OR friend_id > ?3) ORDER BY friend_id LIMIT ?4",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .bind(cursor.map(user_col))
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(|row| friend_of(user, row)).collect())
    }

    #[tracing::instrument(name = "palaver.store.remove_friend", skip_all, fields(tenant = %tenant_id))]
    async fn remove_friend(&self, tenant_id: TenantId, user: UserId, friend: UserId) -> StoreResult<bool> {
        // One statement deletes both directions, so no transaction is needed to keep them together.
        let done = sqlx::query(
            "DELETE FROM friends WHERE tenant_id = ?1 \
             AND ((user_id = ?2 AND friend_id = ?3) OR (user_id = ?3 AND friend_id = ?2))",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .bind(user_col(friend))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.set_remark", skip_all, fields(tenant = %tenant_id))]
    async fn set_remark(
        &self,
        tenant_id: TenantId,
        user: UserId,
        friend: UserId,
        remark: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let done = sqlx::query(
            "UPDATE friends SET remark = ?, updated_at = ? WHERE tenant_id = ? AND user_id = ? AND friend_id = ?",
        )
        .bind(remark)
        .bind(now)
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .bind(user_col(friend))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.block", skip_all, fields(tenant = %tenant_id))]
    async fn block(
        &self,
        tenant_id: TenantId,
        user: UserId,
        blocked: UserId,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "INSERT INTO user_blocks (tenant_id, user_id, blocked_id, reason, created_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT DO NOTHING",
        )
        .bind(t)
        .bind(user_col(user))
        .bind(user_col(blocked))
        .bind(reason)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        settle(&mut tx, t, user, blocked, RequestStatus::Cancelled, now).await?;
        settle(&mut tx, t, blocked, user, RequestStatus::Cancelled, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    #[tracing::instrument(name = "palaver.store.unblock", skip_all, fields(tenant = %tenant_id))]
    async fn unblock(&self, tenant_id: TenantId, user: UserId, blocked: UserId) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM user_blocks WHERE tenant_id = ? AND user_id = ? AND blocked_id = ?")
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .bind(user_col(blocked))
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.list_blocks", skip_all, fields(tenant = %tenant_id))]
    async fn list_blocks(
        &self,
        tenant_id: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Block>> {
        let rows: Vec<BlockRow> = sqlx::query_as(
            "SELECT blocked_id, reason, created_at FROM user_blocks \
             WHERE tenant_id = ?1 AND user_id = ?2 AND (?3 IS NULL OR blocked_id > ?3) ORDER BY blocked_id LIMIT ?4",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .bind(cursor.map(user_col))
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(|row| block_of(user, row)).collect())
    }

    #[tracing::instrument(name = "palaver.store.is_blocked", skip_all, fields(tenant = %tenant_id))]
    async fn is_blocked(&self, tenant_id: TenantId, by: UserId, whom: UserId) -> StoreResult<bool> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM user_blocks WHERE tenant_id = ? AND user_id = ? AND blocked_id = ?)",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(by))
        .bind(user_col(whom))
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)
    }
}
