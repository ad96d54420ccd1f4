//! The notification port over a tenant database: the `im_system_notifications` table of migration 0002. Times
//! are UTC `DATETIME(3)`, converted in SQL, and the content is JSON text.
//!
//! Marking a notice read is one guarded `UPDATE` (only while `read_at` is NULL and the notice has not expired).
//! InnoDB locks the row and re-evaluates the condition on the latest committed version, so when two calls race
//! the second waits for the first and then matches nothing: exactly one call changes the row, and its read time
//! is the one kept. A call that matched nothing then looks the notice up to tell "read already" (false) from "not
//! one of the user's live notices" (`NotFound`). The connection reports rows matched rather than changed, which
//! is the same thing here because every matched row has a NULL `read_at` that the statement sets.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, insert_id, millis_to_datetime, user_col};
use crate::error::db_error;
use palaver_core::ports::{NewNotification, Notification, NotificationStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::bind_notification_page;
use palaver_store_sql::notifications::{already_read, notifications_of};

/// The select list of a [`NotificationColumns`](palaver_store_sql::columns::NotificationColumns) row, in its
/// order, as a literal so that `concat!` can splice it into static SQL.
macro_rules! notification_select {
    () => {
        concat!(
            "SELECT id, user_id, kind, content, source_topic, source_seq, ",
            datetime_to_millis!("read_at"),
            " AS read_ms, ",
            datetime_to_millis!("expires_at"),
            " AS expires_ms, ",
            datetime_to_millis!("created_at"),
            " AS created_ms FROM im_system_notifications "
        )
    };
}

/// The condition that keeps a notice alive at the next bound time, as a literal for `concat!`.
macro_rules! alive {
    () => {
        concat!("(expires_at IS NULL OR expires_at > ", millis_to_datetime!(), ")")
    };
}

#[async_trait::async_trait]
impl NotificationStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.add_notification", skip_all, fields(tenant = %tenant))]
    async fn add(&self, tenant: TenantId, n: &NewNotification, now: UnixMillis) -> StoreResult<Notification> {
        let db = self.db(tenant).await?;
        // A NULL expiry stays NULL through the conversion, since arithmetic on NULL is NULL.
        let done = palaver_store_sql::bind_notification!(
            sqlx::query(concat!(
                "INSERT INTO im_system_notifications \
             (user_id, kind, content, source_topic, source_seq, read_at, expires_at, created_at) \
             VALUES (?, ?, ?, ?, ?, NULL, ",
                millis_to_datetime!(),
                ", ",
                millis_to_datetime!(),
                ")"
            )),
            n,
            now
        )
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(n.stored(insert_id(&done)?, now))
    }

    #[tracing::instrument(name = "palaver.store.list_notifications", skip_all, fields(tenant = %tenant))]
    async fn list(
        &self,
        tenant: TenantId,
        user: UserId,
        unread_only: bool,
        cursor: Option<i64>,
        limit: usize,
        now: UnixMillis,
    ) -> StoreResult<Vec<Notification>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            notification_select!(),
            "WHERE user_id = ? AND (? = 0 OR read_at IS NULL) AND ",
            alive!(),
            " AND id < ? ORDER BY id DESC LIMIT ?"
        );
        let page = bind_notification_page!(sqlx::query_as(sql), user, unread_only, now, cursor, limit);
        notifications_of(page.fetch_all(&db.pool).await.map_err(db_error)?)
    }

    #[tracing::instrument(name = "palaver.store.mark_notification_read", skip_all, fields(tenant = %tenant))]
    async fn mark_read(&self, tenant: TenantId, user: UserId, id: i64, now: UnixMillis) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "UPDATE im_system_notifications SET read_at = ",
            millis_to_datetime!(),
            " WHERE id = ? AND user_id = ? AND read_at IS NULL AND ",
            alive!()
        );
        let mark = sqlx::query(sql).bind(now).bind(id).bind(user_col(user)).bind(now);
        if mark.execute(&db.pool).await.map_err(db_error)?.rows_affected() > 0 {
            return Ok(true);
        }
        // A fresh autocommit read, so it sees the read mark of whichever call won the race.
        let sql = concat!("SELECT 1 FROM im_system_notifications WHERE id = ? AND user_id = ? AND ", alive!());
        let live = sqlx::query_scalar(sql).bind(id).bind(user_col(user)).bind(now);
        let found: Option<i64> = live.fetch_optional(&db.pool).await.map_err(db_error)?;
        already_read(found.is_some())
    }

    #[tracing::instrument(name = "palaver.store.mark_all_notifications_read", skip_all, fields(tenant = %tenant))]
    async fn mark_all_read(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "UPDATE im_system_notifications SET read_at = ",
            millis_to_datetime!(),
            " WHERE user_id = ? AND read_at IS NULL AND ",
            alive!()
        );
        let mark = sqlx::query(sql).bind(now).bind(user_col(user)).bind(now);
        Ok(mark.execute(&db.pool).await.map_err(db_error)?.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.unread_notifications", skip_all, fields(tenant = %tenant))]
    async fn unread_count(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT COUNT(*) FROM im_system_notifications WHERE user_id = ? AND read_at IS NULL AND ",
            alive!()
        );
        let unread = sqlx::query_scalar(sql).bind(user_col(user)).bind(now);
        let n: i64 = unread.fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(n.unsigned_abs())
    }
}
