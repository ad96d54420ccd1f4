//! The subscription port over a tenant database: the `subscriptions` table, soft deletion by `deleted_at`.

use crate::MysqlStore;
use crate::codec::{json_col, json_of, mode_col, mode_of, user_col, user_of};
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
    want: i16,
    given: i16,
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
fn found(rows_matched: u64) -> StoreResult<()> {
    if rows_matched == 0 { Err(StoreError::NotFound) } else { Ok(()) }
}

/// Decodes a list of rows, failing on the first corrupt one.
fn decode(rows: Vec<SubRow>) -> StoreResult<Vec<Subscription>> {
    Ok(rows.into_iter().map(Subscription::try_from).collect::<Result<_, _>>()?)
}

#[async_trait::async_trait]
impl SubscriptionStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.upsert_sub", skip_all, fields(tenant = %tenant))]
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        sqlx::query(concat!(
            "INSERT INTO subscriptions (",
            sub_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON DUPLICATE KEY UPDATE created_at = VALUES(created_at), updated_at = VALUES(updated_at), \
             deleted_at = VALUES(deleted_at), want = VALUES(want), given = VALUES(given), \
             read_seq = VALUES(read_seq), recv_seq = VALUES(recv_seq), del_id = VALUES(del_id), \
             private = VALUES(private)"
        ))
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
        let rows = sqlx::query_as(sql).bind(user_col(user)).fetch_all(&db.pool).await.map_err(db_error)?;
        decode(rows)
    }

    #[tracing::instrument(name = "palaver.store.list_topic_subs", skip_all, fields(tenant = %tenant))]
    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            sub_columns!(),
            " FROM subscriptions WHERE topic = ? AND deleted_at IS NULL ORDER BY user_id"
        );
        let rows = sqlx::query_as(sql).bind(topic).fetch_all(&db.pool).await.map_err(db_error)?;
        decode(rows)
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
        let db = self.db(tenant).await?;
        let done = sqlx::query(
            "UPDATE subscriptions SET want = ?, given = ?, updated_at = ? \
             WHERE topic = ? AND user_id = ? AND deleted_at IS NULL",
        )
        .bind(mode_col(want))
        .bind(mode_col(given))
        .bind(when)
        .bind(topic)
        .bind(user_col(user))
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
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
        let db = self.db(tenant).await?;
        let done = sqlx::query(
            "UPDATE subscriptions SET deleted_at = ?, updated_at = ? \
             WHERE topic = ? AND user_id = ? AND deleted_at IS NULL",
        )
        .bind(when)
        .bind(when)
        .bind(topic)
        .bind(user_col(user))
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
    }
}
