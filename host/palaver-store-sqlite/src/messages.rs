//! The message port over SQLite: appends (through the batch writer) and reads of `im_group_messages` (groups)
//! and `im_messages` (P2P).

use crate::SqliteStore;
use crate::codec::{limit_col, now_millis, tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::{MessageStore, OwedFor, PendingAppend};
use palaver_core::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, StoreError, StoreResult,
    TenantId, UserId,
};
use palaver_store_sql::rows::MessageRow;

/// Which history table a topic's messages live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// `im_group_messages`: group topics and anything else that is not P2P.
    Group,
    /// `im_messages`: P2P topics.
    P2p,
}

/// Splices the table name between two SQL literals at compile time, so every statement stays a static string
/// and no runtime formatting can ever reach the SQL text.
macro_rules! per_table {
    ($table:expr, $before:literal, $after:literal) => {
        match $table {
            Table::Group => concat!($before, "im_group_messages", $after),
            Table::P2p => concat!($before, "im_messages", $after),
        }
    };
}

impl Table {
    /// The table of the stored topic `name`.
    pub(crate) fn of(name: &str) -> Table {
        if name.starts_with("p2p") { Table::P2p } else { Table::Group }
    }

    pub(crate) fn delete_topic_sql(self) -> &'static str {
        per_table!(self, "DELETE FROM ", " WHERE tenant_id = ? AND topic = ?")
    }

    pub(crate) fn hard_delete_sql(self) -> &'static str {
        per_table!(
            self,
            "UPDATE ",
            " SET deleted_at = ?1, updated_at = ?1, content = NULL, head = NULL, version = version + 1, \
             status = CASE WHEN ?6 IS NULL THEN 'deleted' ELSE 'recalled' END, recalled_by = ?6, \
             recalled_at = CASE WHEN ?6 IS NULL THEN NULL ELSE ?1 END \
             WHERE tenant_id = ?2 AND topic = ?3 AND seqid >= ?4 AND seqid < ?5 AND deleted_at IS NULL"
        )
    }

    pub(crate) fn insert_sql(self) -> &'static str {
        per_table!(
            self,
            "INSERT INTO ",
            " (tenant_id, topic, seqid, from_user, client_msg_id, content, head, audit_status, has_risk, risk_flags, \
             created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)"
        )
    }

    pub(crate) fn find_mid_sql(self) -> &'static str {
        per_table!(
            self,
            "SELECT seqid FROM ",
            " WHERE tenant_id = ? AND topic = ? AND from_user = ? AND client_msg_id = ?"
        )
    }

    fn max_seq_sql(self) -> &'static str {
        per_table!(self, "SELECT MAX(seqid) FROM ", " WHERE tenant_id = ? AND topic = ?")
    }

    /// Messages moderation has not passed are left out unless the reader (`?5`) sent them.
    fn list_sql(self) -> &'static str {
        per_table!(
            self,
            "SELECT seqid, created_at, from_user, head, content, client_msg_id, audit_status, risk_flags FROM ",
            " m WHERE m.tenant_id = ?1 AND m.topic = ?2 AND m.deleted_at IS NULL AND m.seqid >= ?3 AND m.seqid < ?4 \
             AND (m.audit_status = 'pass' OR m.from_user = ?5) \
             AND NOT EXISTS (SELECT 1 FROM dellog d WHERE d.tenant_id = ?1 AND d.topic = ?2 \
             AND d.deleted_for = ?5 AND d.low <= m.seqid AND m.seqid < d.hi) \
             ORDER BY m.seqid DESC LIMIT ?6"
        )
    }

    /// Hard-deleted stubs are skipped: with their content gone there is nothing left to review.
    fn set_audit_sql(self) -> &'static str {
        per_table!(
            self,
            "UPDATE ",
            " SET audit_status = ?1, updated_at = MAX(updated_at, ?2) \
             WHERE tenant_id = ?3 AND topic = ?4 AND seqid = ?5 AND deleted_at IS NULL \
             RETURNING seqid, created_at, from_user, head, content, client_msg_id, audit_status, risk_flags"
        )
    }
}

#[async_trait::async_trait]
impl MessageStore for SqliteStore {
    /// Queues the message on the batch writer and waits for the transaction it lands in to commit.
    #[tracing::instrument(name = "palaver.store.append", skip_all, fields(tenant = %tenant_id, seq = msg.seq))]
    async fn append(&self, tenant_id: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        self.batch.queue(tenant_id, msg.clone()).await?.await
    }

    /// Queues the message on the batch writer; the outcome arrives once its transaction committed.
    #[tracing::instrument(name = "palaver.store.queue_append", skip_all, fields(tenant = %tenant_id, seq = msg.seq))]
    async fn queue_append(&self, tenant_id: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        self.batch.queue(tenant_id, msg.clone()).await
    }

    #[tracing::instrument(name = "palaver.store.find_by_client_mid", skip_all, fields(tenant = %tenant_id))]
    async fn find_by_client_mid(
        &self,
        tenant_id: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>> {
        sqlx::query_scalar(Table::of(topic).find_mid_sql())
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(user_col(from))
            .bind(client_mid)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.max_seq", skip_all, fields(tenant = %tenant_id))]
    async fn max_seq(&self, tenant_id: TenantId, topic: &str) -> StoreResult<Seq> {
        // Hard-deleted stubs keep their rows, so their seqs count: they must never be handed out again.
        let max: Option<i64> = sqlx::query_scalar(Table::of(topic).max_seq_sql())
            .bind(tenant(tenant_id))
            .bind(topic)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(max.unwrap_or(0))
    }

    #[tracing::instrument(name = "palaver.store.list_messages", skip_all, fields(tenant = %tenant_id))]
    async fn list_messages(
        &self,
        tenant_id: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>> {
        let rows: Vec<MessageRow> = sqlx::query_as(Table::of(topic).list_sql())
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(query.since.unwrap_or(Seq::MIN))
            .bind(query.before.unwrap_or(Seq::MAX))
            .bind(user_col(reader))
            .bind(limit_col(query.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(|r| r.into_message(topic)).collect::<Result<_, _>>()?)
    }

    #[tracing::instrument(name = "palaver.store.delete_messages", skip_all, fields(tenant = %tenant_id))]
    async fn delete_messages(&self, tenant_id: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        crate::deletions::delete(self, tenant_id, topic, request).await
    }

    #[tracing::instrument(name = "palaver.store.set_audit", skip_all, fields(tenant = %tenant_id, seq = seq))]
    async fn set_audit(
        &self,
        tenant_id: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        // One statement both changes and returns the row, so no other write can come between the two.
        let row: Option<MessageRow> = sqlx::query_as(Table::of(topic).set_audit_sql())
            .bind(audit.as_str())
            .bind(now_millis())
            .bind(t)
            .bind(topic)
            .bind(seq)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let message = row.ok_or(StoreError::NotFound)?.into_message(topic)?;
        crate::outbox::append(&mut tx, t, &owed(&message), now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(message)
    }

    #[tracing::instrument(name = "palaver.store.list_deletions", skip_all, fields(tenant = %tenant_id))]
    async fn list_deletions(&self, tenant_id: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        crate::deletions::list(self, tenant_id, topic, reader).await
    }
}
