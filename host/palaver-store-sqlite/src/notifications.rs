//! The notification port over SQLite: the `im_system_notifications` table of migration 0003.
//!
//! Reads run on the reader pool and writes on the single writer connection. Marking a notice read is one guarded
//! `UPDATE` (only while `read_at` is NULL and the notice has not expired), so of two racing calls exactly one
//! changes the row and the first read time is the one kept; a call that changed nothing then looks the notice up
//! to tell "read already" from "not one of the user's notices". Expiry is checked in every statement against
//! the call's `now`, so an expired notice vanishes before any sweep deletes it.

use crate::SqliteStore;
use crate::codec::{tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::{NewNotification, Notification, NotificationStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::bind_notification_page;
use palaver_store_sql::notifications::{already_read, notifications_of};

/// The columns of a [`NotificationColumns`](palaver_store_sql::columns::NotificationColumns) row, in its order,
/// as a literal so that `concat!` can splice it into static SQL.
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
        let page = sqlx::query_as(sql).bind(tenant(tenant_id));
        let page = bind_notification_page!(page, user, unread_only, now, cursor, limit);
        notifications_of(page.fetch_all(&self.pool).await.map_err(db_error)?)
    }

    #[tracing::instrument(name = "palaver.store.mark_notification_read", skip_all, fields(tenant = %tenant_id))]
    async fn mark_read(&self, tenant_id: TenantId, user: UserId, id: i64, now: UnixMillis) -> StoreResult<bool> {
        let (t, u) = (tenant(tenant_id), user_col(user));
        // The guard on read_at makes the statement change the row at most once, however many calls race.
        let sql = concat!(
            "UPDATE im_system_notifications SET read_at = ?1 \
             WHERE tenant_id = ?2 AND id = ?3 AND user_id = ?4 AND read_at IS NULL AND ",
            alive_at!("1")
        );
        let mark = sqlx::query(sql).bind(now).bind(t).bind(id).bind(u);
        if mark.execute(&self.writer).await.map_err(db_error)?.rows_affected() == 1 {
            return Ok(true);
        }
        // Nothing changed: either it was read already (false) or it is not the user's live notice (NotFound).
        // The read runs after the update committed, so it sees the read mark of whichever call won.
        let sql = concat!(
            "SELECT EXISTS (SELECT 1 FROM im_system_notifications \
             WHERE tenant_id = ?1 AND id = ?2 AND user_id = ?3 AND ",
            alive_at!("4"),
            ")"
        );
        let live = sqlx::query_scalar(sql).bind(t).bind(id).bind(u).bind(now);
        already_read(live.fetch_one(&self.pool).await.map_err(db_error)?)
    }

    #[tracing::instrument(name = "palaver.store.mark_all_notifications_read", skip_all, fields(tenant = %tenant_id))]
    async fn mark_all_read(&self, tenant_id: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let sql = concat!(
            "UPDATE im_system_notifications SET read_at = ?1 \
             WHERE tenant_id = ?2 AND user_id = ?3 AND read_at IS NULL AND ",
            alive_at!("1")
        );
        let mark = sqlx::query(sql).bind(now).bind(tenant(tenant_id)).bind(user_col(user));
        Ok(mark.execute(&self.writer).await.map_err(db_error)?.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.unread_notifications", skip_all, fields(tenant = %tenant_id))]
    async fn unread_count(&self, tenant_id: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let sql = concat!(
            "SELECT COUNT(*) FROM im_system_notifications \
             WHERE tenant_id = ?1 AND user_id = ?2 AND read_at IS NULL AND ",
            alive_at!("3")
        );
        let unread = sqlx::query_scalar(sql).bind(tenant(tenant_id)).bind(user_col(user)).bind(now);
        let n: i64 = unread.fetch_one(&self.pool).await.map_err(db_error)?;
        Ok(n.unsigned_abs())
    }
}
