//! The subscription port over a tenant database: the `subscriptions` table, soft deletion by `deleted_at`.

use crate::MysqlStore;
use crate::codec::{mode_of, user_col};
use crate::error::db_error;
use palaver_core::ports::SubscriptionStore;
use palaver_core::{AccessMode, Seq, StoreResult, Subscription, TenantId, UnixMillis, UserId};
use palaver_store_sql::rows::{SubRow, decode_all};
use palaver_store_sql::subs::SubChange;
use palaver_store_sql::writes::found;
use palaver_store_sql::{bind_sub_change, sub_columns};
use sqlx::{AssertSqlSafe, MySqlPool};

/// Writes `change` to the active subscription of `user` to `topic`; `NotFound` when there is none. The statement
/// joins only a constant `SET` list; every value is bound.
async fn change_sub(pool: &MySqlPool, topic: &str, user: UserId, change: SubChange<'_>) -> StoreResult<()> {
    let sql = format!(
        "UPDATE subscriptions SET {} WHERE topic = ? AND user_id = ? AND deleted_at IS NULL",
        change.set_list()
    );
    let query = bind_sub_change!(sqlx::query(AssertSqlSafe(sql)), change).bind(topic).bind(user_col(user));
    found(query.execute(pool).await.map_err(db_error)?.rows_affected())
}

#[async_trait::async_trait]
impl SubscriptionStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.upsert_sub", skip_all, fields(tenant = %tenant))]
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        palaver_store_sql::bind_sub!(
            sqlx::query(concat!(
                "INSERT INTO subscriptions (",
                sub_columns!(),
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE created_at = VALUES(created_at), updated_at = VALUES(updated_at), \
                 deleted_at = VALUES(deleted_at), want = VALUES(want), given = VALUES(given), \
                 read_seq = VALUES(read_seq), recv_seq = VALUES(recv_seq), del_id = VALUES(del_id), \
                 private = VALUES(private)"
            )),
            sub
        )
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.get_sub", skip_all, fields(tenant = %tenant))]
    async fn get_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE topic = ? AND user_id = ? AND deleted_at IS NULL"
        );
        let row: Option<SubRow> =
            sqlx::query_as(sql).bind(topic).bind(user_col(user)).fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(Subscription::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.list_user_subs", skip_all, fields(tenant = %tenant))]
    async fn list_user_subs(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Subscription>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE user_id = ? AND deleted_at IS NULL ORDER BY topic"
        );
        let rows: Vec<SubRow> = sqlx::query_as(sql).bind(user_col(user)).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.list_topic_subs", skip_all, fields(tenant = %tenant))]
    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE topic = ? AND deleted_at IS NULL ORDER BY user_id"
        );
        let rows: Vec<SubRow> = sqlx::query_as(sql).bind(topic).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.update_sub_mode", skip_all, fields(tenant = %tenant))]
    async fn update_sub_mode(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        want: AccessMode,
        given: AccessMode,
        when: UnixMillis,
    ) -> StoreResult<()> {
        change_sub(&self.db(tenant).await?.pool, topic, user, SubChange::Mode { want, given, when }).await
    }

    #[tracing::instrument(name = "palaver.store.update_sub_cursors", skip_all, fields(tenant = %tenant))]
    async fn update_sub_cursors(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)> {
        let db = self.db(tenant).await?;
        let uid = user_col(user);
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        // MariaDB assigns single-table SET clauses left to right, so `read_seq` in the second clause is already the
        // raised value: recv ends at the largest of its old value, the new recv, and the new read.
        let done = sqlx::query(
            "UPDATE subscriptions SET read_seq = GREATEST(read_seq, ?), recv_seq = GREATEST(recv_seq, ?, read_seq) \
             WHERE topic = ? AND user_id = ? AND deleted_at IS NULL",
        )
        .bind(read.unwrap_or(0))
        .bind(recv.unwrap_or(0))
        .bind(topic)
        .bind(uid)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())?;
        // The row is locked by the update until commit, so this reads exactly what the update left.
        let cursors: (i64, i64) =
            sqlx::query_as("SELECT recv_seq, read_seq FROM subscriptions WHERE topic = ? AND user_id = ?")
                .bind(topic)
                .bind(uid)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(cursors)
    }

    #[tracing::instrument(name = "palaver.store.delete_sub", skip_all, fields(tenant = %tenant))]
    async fn delete_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        change_sub(&self.db(tenant).await?.pool, topic, user, SubChange::Delete { given: None, when }).await
    }

    #[tracing::instrument(name = "palaver.store.set_sub_private", skip_all, fields(tenant = %tenant))]
    async fn set_sub_private(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()> {
        change_sub(&self.db(tenant).await?.pool, topic, user, SubChange::Private { private, when }).await
    }

    #[tracing::instrument(name = "palaver.store.remove_sub", skip_all, fields(tenant = %tenant))]
    async fn remove_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        let removal = SubChange::Delete { given: Some(AccessMode::NONE), when };
        change_sub(&self.db(tenant).await?.pool, topic, user, removal).await
    }

    #[tracing::instrument(name = "palaver.store.was_removed", skip_all, fields(tenant = %tenant))]
    async fn was_removed(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let given: Option<i16> = sqlx::query_scalar(
            "SELECT given FROM subscriptions WHERE topic = ? AND user_id = ? AND deleted_at IS NOT NULL",
        )
        .bind(topic)
        .bind(user_col(user))
        .fetch_optional(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(given.map(|g| mode_of("given", g)).transpose()? == Some(AccessMode::NONE))
    }
}
