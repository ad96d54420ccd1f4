//! The outbox, its relay lease and the audit log over SQLite (migrations 0005 and 0006).
//!
//! Entries are written on the single writer connection, so ids (AUTOINCREMENT) rise in commit order and the relay,
//! reading in id order, produces a tenant's entries in the order they were written.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{AuditEvent, AuditStore, OutboxEntry, OutboxStore, QueueRecord};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, now_millis};
use palaver_store_sql::columns::limit_col;
use palaver_store_sql::queue::{AuditColumns, OutboxColumns, audit_of, headers_col, outbox_entry_of};
use sqlx::{Sqlite, Transaction};

/// Appends `records` to tenant `t`'s outbox inside the caller's write transaction, in order (ids rise with them),
/// so that they commit with its state change.
pub(crate) async fn append(
    tx: &mut Transaction<'static, Sqlite>,
    t: i64,
    records: &[QueueRecord],
    now: UnixMillis,
) -> StoreResult<()> {
    for r in records {
        sqlx::query(
            "INSERT INTO outbox (tenant_id, topic, msg_key, headers, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(t)
        .bind(r.topic.as_str())
        .bind(&r.key)
        .bind(headers_col(&r.headers))
        .bind(&r.payload)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl OutboxStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.outbox_put", skip_all, fields(tenant = %tenant_id))]
    async fn put(&self, tenant_id: TenantId, records: &[QueueRecord]) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        append(&mut tx, tenant(tenant_id), records, now_millis()).await?;
        tx.commit().await.map_err(db_error)
    }

    async fn pending(&self, tenant_id: TenantId, limit: usize) -> StoreResult<Vec<OutboxEntry>> {
        let rows: Vec<OutboxColumns> = sqlx::query_as(
            "SELECT id, topic, msg_key, headers, payload, created_at FROM outbox WHERE tenant_id = ? \
             ORDER BY id LIMIT ?",
        )
        .bind(tenant(tenant_id))
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|r| outbox_entry_of(tenant_id, r).map_err(StoreError::from)).collect()
    }

    async fn remove(&self, tenant_id: TenantId, ids: &[i64]) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        for id in ids {
            sqlx::query("DELETE FROM outbox WHERE tenant_id = ? AND id = ?")
                .bind(tenant(tenant_id))
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    async fn depth(&self, tenant_id: TenantId) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox WHERE tenant_id = ?")
            .bind(tenant(tenant_id))
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn lease(&self, tenant_id: TenantId, owner: &str, ttl_ms: i64) -> StoreResult<bool> {
        let now = now_millis();
        // One statement on the one writer: the row is taken only when free, expired or already ours.
        let done = sqlx::query(
            "INSERT INTO outbox_lease (tenant_id, owner, expires_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (tenant_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at \
             WHERE outbox_lease.owner = excluded.owner OR outbox_lease.expires_at <= ?4",
        )
        .bind(tenant(tenant_id))
        .bind(owner)
        .bind(now.saturating_add(ttl_ms))
        .bind(now)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait::async_trait]
impl AuditStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.record_audit", skip_all, fields(tenant = %tenant_id))]
    async fn record_audit(&self, tenant_id: TenantId, e: &AuditEvent) -> StoreResult<bool> {
        // The unique (tenant, event id) index makes a redelivered event a no-op: at most one row per event.
        let done = palaver_store_sql::bind_audit!(
            sqlx::query(
                "INSERT INTO audit_log (tenant_id, event_id, actor_kind, actor_id, action, target_kind, target_id, \
                 topic, seqid, detail, client_ip, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (tenant_id, event_id) DO NOTHING",
            )
            .bind(tenant(tenant_id)),
            e
        )
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    async fn list_audit(&self, tenant_id: TenantId, limit: usize) -> StoreResult<Vec<AuditEvent>> {
        let rows: Vec<AuditColumns> = sqlx::query_as(
            "SELECT event_id, actor_kind, actor_id, action, target_kind, target_id, topic, seqid, detail, \
             client_ip, created_at FROM audit_log WHERE tenant_id = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(tenant(tenant_id))
        .bind(limit_col(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|r| audit_of(tenant_id, r).map_err(StoreError::from)).collect()
    }
}
