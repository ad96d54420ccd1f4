//! The notification port over SQLite: the `im_system_notifications` table of migration 0003.
//!
//! Reads run on the reader pool and writes on the single writer connection. Marking a notice read is one guarded
//! `UPDATE` (only while `read_at` is NULL and the notice has not expired), so of two racing calls exactly one
//! changes the row and the first read time is the one kept; a call that changed nothing then looks the notice up
//! to tell "read already" from "not one of the user's notices". Expiry is checked in every statement against
//! the call's `now`, so an expired notice vanishes before any sweep deletes it.

use crate::SqliteStore;
use crate::codec::{limit_col, tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::{NewNotification, Notification, NotificationStore};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::columns::{NotificationColumns, notification_of};

/// The columns of a [`NotificationColumns`] row, in its order, as a literal so that `concat!` can splice it into static SQL.
macro_rules! notification_columns {
    () => {
        "id, user_id, kind, content, source_topic, source_seq, read_at, expires_at, created_at"
    };
}

/// The condition that keeps a notice alive at the bound time `?N`, as a literal for `concat!`.
macro_rules! alive_at {
    ($now:literal) => {
        concat!("(expires_at IS NULL OR expires_at > ?", $now, ")")
    };
}

#[async_trait::async_trait]
impl NotificationStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.add_notification", skip_all, fields(tenant = %tenant_id))]
    async fn add(&self, tenant_id: TenantId, n: &NewNotification, now: UnixMillis) -> StoreResult<Notification> {
        let done = palaver_store_sql::bind_notification!(
            sqlx::query(
                "INSERT INTO im_system_notifications \
             (tenant_id, user_id, kind, content, source_topic, source_seq, read_at, expires_at, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            )
            .bind(tenant(tenant_id)),
            n,
            now
        )
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(n.stored(done.last_insert_rowid(), now))
    }

    #[tracing::instrument(name = "palaver.store.list_notifications", skip_all, fields(tenant = %tenant_id))]
    async fn list(
        &self,
        tenant_id: TenantId,
        user: UserId,
        unread_only: bool,
        cursor: Option<i64>,
        limit: usize,
        now: UnixMillis,
    ) -> StoreResult<Vec<Notification>> {
        let sql = concat!(
            "SELECT ",
            notification_columns!(),
            " FROM im_system_notifications WHERE tenant_id = ?1 AND user_id = ?2 AND (?3 = 0 OR read_at IS NULL) \
             AND ",
            alive_at!("4"),
            " AND id < ?5 ORDER BY id DESC LIMIT ?6"
        );
        let rows: Vec<NotificationColumns> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .bind(unread_only)
            .bind(now)
            .bind(cursor.unwrap_or(i64::MAX))
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(notification_of).collect::<Result<_, _>>()?)
    }

    #[tracing::instrument(name = "palaver.store.mark_notification_read", skip_all, fields(tenant = %tenant_id))]
    async fn mark_read(&self, tenant_id: TenantId, user: UserId, id: i64, now: UnixMillis) -> StoreResult<bool> {
        let (t, u) = (tenant(tenant_id), user_col(user));
        // The guard on read_at makes the statement change the row at most once, however many calls race.
        let done = sqlx::query(concat!(
            "UPDATE im_system_notifications SET read_at = ?1 \
             WHERE tenant_id = ?2 AND id = ?3 AND user_id = ?4 AND read_at IS NULL AND ",
            alive_at!("1")
        ))
        .bind(now)
        .bind(t)
        .bind(id)
        .bind(u)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        if done.rows_affected() == 1 {
            return Ok(true);
        }
        // Nothing changed: either it was read already (false) or it is not the user's live notice (NotFound).
        // The read runs after the update committed, so it sees the read mark of whichever call won.
        let exists: bool = sqlx::query_scalar(concat!(
            "SELECT EXISTS (SELECT 1 FROM im_system_notifications \
             WHERE tenant_id = ?1 AND id = ?2 AND user_id = ?3 AND ",
            alive_at!("4"),
            ")"
        ))
        .bind(t)
        .bind(id)
        .bind(u)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        if exists { Ok(false) } else { Err(StoreError::NotFound) }
    }

    #[tracing::instrument(name = "palaver.store.mark_all_notifications_read", skip_all, fields(tenant = %tenant_id))]
    async fn mark_all_read(&self, tenant_id: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let done = sqlx::query(concat!(
            "UPDATE im_system_notifications SET read_at = ?1 \
             WHERE tenant_id = ?2 AND user_id = ?3 AND read_at IS NULL AND ",
            alive_at!("1")
        ))
        .bind(now)
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.unread_notifications", skip_all, fields(tenant = %tenant_id))]
    async fn unread_count(&self, tenant_id: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar(concat!(
            "SELECT COUNT(*) FROM im_system_notifications \
             WHERE tenant_id = ?1 AND user_id = ?2 AND read_at IS NULL AND ",
            alive_at!("3")
        ))
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(n.unsigned_abs())
    }
}
