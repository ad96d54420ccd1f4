//! The subscription port over SQLite: the `subscriptions` table, soft deletion by `deleted_at`.

use crate::SqliteStore;
use crate::codec::{json_col, json_of, mode_col, mode_of, tenant, user_col, user_of};
use crate::error::{CorruptRow, db_error};
use palaver_core::ports::SubscriptionStore;
use palaver_core::{AccessMode, Seq, StoreError, StoreResult, Subscription, TenantId, UnixMillis, UserId};

/// The columns of a [`SubRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! sub_columns {
    () => {
        "topic, user_id, created_at, updated_at, deleted_at, want, given, read_seq, recv_seq, del_id, private"
    };
}

/// A `subscriptions` row as selected by `sub_columns!`.
#[derive(sqlx::FromRow)]
struct SubRow {
    topic: String,
    user_id: i64,
    created_at: i64,
    updated_at: i64,
    deleted_at: Option<i64>,
    want: i64,
    given: i64,
    read_seq: i64,
    recv_seq: i64,
    del_id: i64,
    private: Option<String>,
}

impl TryFrom<SubRow> for Subscription {
    type Error = CorruptRow;

    fn try_from(r: SubRow) -> Result<Self, CorruptRow> {
        Ok(Subscription {
            topic: r.topic,
            user: user_of(r.user_id),
            created: r.created_at,
            updated: r.updated_at,
            deleted: r.deleted_at,
            want: mode_of("want", r.want)?,
            given: mode_of("given", r.given)?,
            read: r.read_seq,
            recv: r.recv_seq,
            del_id: r.del_id,
            private: json_of("private", r.private)?,
        })
    }
}

/// `NotFound` when an update matched no active subscription.
fn found(rows_affected: u64) -> StoreResult<()> {
    if rows_affected == 0 { Err(StoreError::NotFound) } else { Ok(()) }
}

/// Decodes a list of rows, failing on the first corrupt one.
fn decode(rows: Vec<SubRow>) -> StoreResult<Vec<Subscription>> {
    Ok(rows.into_iter().map(Subscription::try_from).collect::<Result<_, _>>()?)
}

#[async_trait::async_trait]
impl SubscriptionStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.upsert_sub", skip_all, fields(tenant = %tenant_id))]
    async fn upsert_sub(&self, tenant_id: TenantId, sub: &Subscription) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO subscriptions (tenant_id, topic, user_id, created_at, updated_at, deleted_at, want, given, \
             read_seq, recv_seq, del_id, private) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, topic, user_id) DO UPDATE SET created_at = excluded.created_at, \
             updated_at = excluded.updated_at, deleted_at = excluded.deleted_at, want = excluded.want, \
             given = excluded.given, read_seq = excluded.read_seq, recv_seq = excluded.recv_seq, \
             del_id = excluded.del_id, private = excluded.private",
        )
        .bind(tenant(tenant_id))
        .bind(&sub.topic)
        .bind(user_col(sub.user))
        .bind(sub.created)
        .bind(sub.updated)
        .bind(sub.deleted)
        .bind(mode_col(sub.want))
        .bind(mode_col(sub.given))
        .bind(sub.read)
        .bind(sub.recv)
        .bind(sub.del_id)
        .bind(json_col(sub.private.as_ref()))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
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
        let rows = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        decode(rows)
    }

    #[tracing::instrument(name = "palaver.store.list_topic_subs", skip_all, fields(tenant = %tenant_id))]
    async fn list_topic_subs(&self, tenant_id: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE tenant_id = ? AND topic = ? AND deleted_at IS NULL ORDER BY user_id"
        );
        let rows =
            sqlx::query_as(sql).bind(tenant(tenant_id)).bind(topic).fetch_all(&self.pool).await.map_err(db_error)?;
        decode(rows)
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
        let done = sqlx::query(
            "UPDATE subscriptions SET want = ?, given = ?, updated_at = ? \
             WHERE tenant_id = ? AND topic = ? AND user_id = ? AND deleted_at IS NULL",
        )
        .bind(mode_col(want))
        .bind(mode_col(given))
        .bind(when)
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(user_col(user))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
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
        let done = sqlx::query(
            "UPDATE subscriptions SET deleted_at = ?1, updated_at = ?1 \
             WHERE tenant_id = ?2 AND topic = ?3 AND user_id = ?4 AND deleted_at IS NULL",
        )
        .bind(when)
        .bind(tenant(tenant_id))
        .bind(topic)
        .bind(user_col(user))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
    }
}
