//! The subscription port over SQLite: the `subscriptions` table, soft deletion by `deleted_at`.

use crate::SqliteStore;
use crate::codec::{mode_of, tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::SubscriptionStore;
use palaver_core::{AccessMode, Seq, StoreError, StoreResult, Subscription, TenantId, UnixMillis, UserId};
use palaver_store_sql::rows::{SubRow, decode_all};
use palaver_store_sql::subs::SubChange;
use palaver_store_sql::writes::found;
use palaver_store_sql::{bind_sub, bind_sub_change, sub_columns};
use sqlx::AssertSqlSafe;

impl SqliteStore {
    /// Writes `change` to the active subscription of `user` to `topic`; `NotFound` when there is none. The
    /// statement joins only a constant `SET` list; every value is bound.
    async fn change_sub(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        change: SubChange<'_>,
    ) -> StoreResult<()> {
        let sql = format!(
            "UPDATE subscriptions SET {} WHERE tenant_id = ? AND topic = ? AND user_id = ? AND deleted_at IS NULL",
            change.set_list()
        );
        let done = bind_sub_change!(sqlx::query(AssertSqlSafe(sql)), change)
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(user_col(user))
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        found(done.rows_affected())
    }
}

#[async_trait::async_trait]
impl SubscriptionStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.upsert_sub", skip_all, fields(tenant = %tenant_id))]
    async fn upsert_sub(&self, tenant_id: TenantId, sub: &Subscription) -> StoreResult<()> {
        let upsert = sqlx::query(concat!(
            "INSERT INTO subscriptions (tenant_id, ",
            sub_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, topic, user_id) DO UPDATE SET created_at = excluded.created_at, \
             updated_at = excluded.updated_at, deleted_at = excluded.deleted_at, want = excluded.want, \
             given = excluded.given, read_seq = excluded.read_seq, recv_seq = excluded.recv_seq, \
             del_id = excluded.del_id, private = excluded.private"
        ));
        bind_sub!(upsert.bind(tenant(tenant_id)), sub).execute(&self.writer).await.map_err(db_error)?;
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.get_sub", skip_all, fields(tenant = %tenant_id))]
    async fn get_sub(&self, tenant_id: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>> {
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE tenant_id = ? AND topic = ? AND user_id = ? AND deleted_at IS NULL"
        );
        let row: Option<SubRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(user_col(user))
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(Subscription::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.list_user_subs", skip_all, fields(tenant = %tenant_id))]
    async fn list_user_subs(&self, tenant_id: TenantId, user: UserId) -> StoreResult<Vec<Subscription>> {
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE tenant_id = ? AND user_id = ? AND deleted_at IS NULL ORDER BY topic"
        );
        let rows: Vec<SubRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.list_topic_subs", skip_all, fields(tenant = %tenant_id))]
    async fn list_topic_subs(&self, tenant_id: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE tenant_id = ? AND topic = ? AND deleted_at IS NULL ORDER BY user_id"
        );
        let rows: Vec<SubRow> =
            sqlx::query_as(sql).bind(tenant(tenant_id)).bind(topic).fetch_all(&self.pool).await.map_err(db_error)?;
        Ok(decode_all(rows)?)
    }

    #[tracing::instrument(name = "palaver.store.update_sub_mode", skip_all, fields(tenant = %tenant_id))]
    async fn update_sub_mode(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        want: AccessMode,
        given: AccessMode,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.change_sub(tenant_id, topic, user, SubChange::Mode { want, given, when }).await
    }

    #[tracing::instrument(name = "palaver.store.set_sub_private", skip_all, fields(tenant = %tenant_id))]
    async fn set_sub_private(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.change_sub(tenant_id, topic, user, SubChange::Private { private, when }).await
    }

    #[tracing::instrument(name = "palaver.store.remove_sub", skip_all, fields(tenant = %tenant_id))]
    async fn remove_sub(&self, tenant_id: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.change_sub(tenant_id, topic, user, SubChange::Delete { given: Some(AccessMode::NONE), when }).await
    }

    #[tracing::instrument(name = "palaver.store.was_removed", skip_all, fields(tenant = %tenant_id))]
    async fn was_removed(&self, tenant_id: TenantId, topic: &str, user: UserId) -> StoreResult<bool> {
        let given: Option<i64> = sqlx::query_scalar(
            "SELECT given FROM subscriptions \
             WHERE tenant_id = ? AND topic = ? AND user_id = ? AND deleted_at IS NOT NULL",
        )
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(user_col(user))
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(given.map(|g| mode_of("given", g)).transpose()? == Some(AccessMode::NONE))
    }

    #[tracing::instrument(name = "palaver.store.update_sub_cursors", skip_all, fields(tenant = %tenant_id))]
    async fn update_sub_cursors(
        &self,
        tenant_id: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)> {
        // SQLite evaluates every right-hand side against the row before the update, so recv is raised to the
        // larger of its old value, the new recv, and the read cursor as this same statement raises it.
        let cursors: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE subscriptions SET read_seq = MAX(read_seq, ?1), recv_seq = MAX(recv_seq, ?2, read_seq, ?1) \
             WHERE tenant_id = ?3 AND topic = ?4 AND user_id = ?5 AND deleted_at IS NULL \
             RETURNING recv_seq, read_seq",
        )
        .bind(read.unwrap_or(0))
        .bind(recv.unwrap_or(0))
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(user_col(user))
        .fetch_optional(&self.writer)
        .await
        .map_err(db_error)?;
        cursors.ok_or(StoreError::NotFound)
    }

    #[tracing::instrument(name = "palaver.store.delete_sub", skip_all, fields(tenant = %tenant_id))]
    async fn delete_sub(&self, tenant_id: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.change_sub(tenant_id, topic, user, SubChange::Delete { given: None, when }).await
    }
}
