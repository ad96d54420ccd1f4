//! The message port over a tenant database: appends through the batch writer, and reads of `im_group_messages`
//! (groups) and `im_messages` (P2P).

use crate::MysqlStore;
use crate::codec::{limit_col, now_millis, user_col};
use crate::error::db_error;
use crate::table::Table;
use palaver_core::ports::{MessageStore, OwedFor, PendingAppend};
use palaver_core::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, StoreError, StoreResult,
    TenantId, UserId,
};
use palaver_store_sql::rows::MessageRow;

#[async_trait::async_trait]
impl MessageStore for MysqlStore {
    /// Queues the message on the tenant's batch writer and waits for the transaction it lands in to commit.
    #[tracing::instrument(name = "palaver.store.append", skip_all, fields(tenant = %tenant, seq = msg.seq))]
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        let db = self.db(tenant).await?;
        db.writer.append(msg.clone()).await
    }

    /// Queues the message on the tenant's batch writer; the outcome arrives once its transaction committed.
    #[tracing::instrument(name = "palaver.store.queue_append", skip_all, fields(tenant = %tenant, seq = msg.seq))]
    async fn queue_append(&self, tenant: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        let db = self.db(tenant).await?;
        db.writer.queue(msg.clone()).await
    }

    #[tracing::instrument(name = "palaver.store.find_by_client_mid", skip_all, fields(tenant = %tenant))]
    async fn find_by_client_mid(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>> {
        let db = self.db(tenant).await?;
        sqlx::query_scalar(Table::of(topic).find_mid_sql())
            .bind(topic)
            .bind(user_col(from))
            .bind(client_mid)
            .fetch_optional(&db.pool)
            .await
            .map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.max_seq", skip_all, fields(tenant = %tenant))]
    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq> {
        let db = self.db(tenant).await?;
        let max: Option<i64> = sqlx::query_scalar(Table::of(topic).max_seq_sql())
            .bind(topic)
            .fetch_one(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(max.unwrap_or(0))
    }

    #[tracing::instrument(name = "palaver.store.list_messages", skip_all, fields(tenant = %tenant))]
    async fn list_messages(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>> {
        let db = self.db(tenant).await?;
        let reader = user_col(reader);
        let rows: Vec<MessageRow> = sqlx::query_as(Table::of(topic).list_sql())
            .bind(topic)
            .bind(query.since.unwrap_or(Seq::MIN))
            .bind(query.before.unwrap_or(Seq::MAX))
            .bind(reader)
            .bind(topic)
            .bind(reader)
            .bind(limit_col(query.limit))
            .fetch_all(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(|r| r.into_message(topic)).collect::<Result<_, _>>()?)
    }

    #[tracing::instrument(name = "palaver.store.delete_messages", skip_all, fields(tenant = %tenant))]
    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        let db = self.db(tenant).await?;
        crate::deletions::delete(&db.pool, topic, request).await
    }

    #[tracing::instrument(name = "palaver.store.set_audit", skip_all, fields(tenant = %tenant, seq = seq))]
    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        let db = self.db(tenant).await?;
        let table = Table::of(topic);
        // The update locks the row until commit, so the read that follows returns exactly what it left.
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = sqlx::query(table.set_audit_sql())
            .bind(audit.as_str())
            .bind(now_millis())
            .bind(topic)
            .bind(seq)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let row: Option<MessageRow> =
            sqlx::query_as(table.get_sql()).bind(topic).bind(seq).fetch_optional(&mut *tx).await.map_err(db_error)?;
        let message = row.ok_or(StoreError::NotFound)?.into_message(topic)?;
        crate::outbox::append(&mut tx, &owed(&message), now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(message)
    }

    #[tracing::instrument(name = "palaver.store.list_deletions", skip_all, fields(tenant = %tenant))]
    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        let db = self.db(tenant).await?;
        crate::deletions::list(&db.pool, topic, reader).await
    }
}
