//! The outbox, its relay lease and the audit log over a tenant database (migrations 0005 and 0006). The tenant id
//! picks the database, so these tables have no tenant column.
//!
//! Ids are AUTO_INCREMENT and one `put` is one multi-row INSERT, so a put's entries commit together and in order.
//! Two concurrent puts may commit out of id order (the smaller id last); the relay then produces the larger first
//! and the smaller on its next pass. Neither is lost, and records with no causal order between them have no order
//! to keep: a producer that owes an order puts the records in one call.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, millis_to_datetime, now_millis};
use crate::error::db_error;
use palaver_core::ports::{AuditEvent, AuditStore, OutboxEntry, OutboxStore, QueueRecord};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis};
use palaver_store_sql::columns::limit_col;
use palaver_store_sql::queue::{AuditColumns, OutboxColumns, audit_of, headers_col, outbox_entry_of};
use sqlx::{MySql, MySqlConnection, QueryBuilder};

/// Appends `records` to the outbox on `conn` (a pool connection, or the caller's transaction so that the records
/// commit with its state change) in one multi-row statement: they commit together, in order.
pub(crate) async fn append(conn: &mut MySqlConnection, records: &[QueueRecord], now: UnixMillis) -> StoreResult<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut q: QueryBuilder<MySql> =
        QueryBuilder::new("INSERT INTO outbox (topic, msg_key, headers, payload, created_at) ");
    q.push_values(records, |mut row, r| {
        row.push_bind(r.topic.as_str())
            .push_bind(&r.key)
            .push_bind(headers_col(&r.headers))
            .push_bind(&r.payload)
            // `millis_to_datetime!` with its placeholder bound here.
            .push("TIMESTAMPADD(MICROSECOND, ")
            .push_bind_unseparated(now)
            .push_unseparated(" * 1000, '1970-01-01 00:00:00')");
    });
    q.build().execute(conn).await.map_err(db_error)?;
    Ok(())
}

#[async_trait::async_trait]
impl OutboxStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.outbox_put", skip_all, fields(tenant = %tenant))]
    async fn put(&self, tenant: TenantId, records: &[QueueRecord]) -> StoreResult<()> {
        if records.is_empty() {
            return Ok(());
        }
        let db = self.db(tenant).await?;
        let mut conn = db.pool.acquire().await.map_err(db_error)?;
        append(&mut conn, records, now_millis()).await
    }

    async fn pending(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<OutboxEntry>> {
        let db = self.db(tenant).await?;
        let rows: Vec<OutboxColumns> = sqlx::query_as(concat!(
            "SELECT id, topic, msg_key, CAST(headers AS CHAR), payload, ",
            datetime_to_millis!("created_at"),
            " FROM outbox ORDER BY id LIMIT ?"
        ))
        .bind(limit_col(limit))
        .fetch_all(&db.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|r| outbox_entry_of(tenant, r).map_err(StoreError::from)).collect()
    }

    async fn remove(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let db = self.db(tenant).await?;
        let mut q: QueryBuilder<MySql> = QueryBuilder::new("DELETE FROM outbox WHERE id IN (");
        let mut list = q.separated(", ");
        for id in ids {
            list.push_bind(id);
        }
        q.push(")");
        q.build().execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }

    async fn depth(&self, tenant: TenantId) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox").fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn lease(&self, tenant: TenantId, owner: &str, ttl_ms: i64) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let now = now_millis();
        let until = now.saturating_add(ttl_ms);
        let inserted = sqlx::query("INSERT IGNORE INTO outbox_lease (id, owner, expires_at) VALUES (1, ?, ?)")
            .bind(owner)
            .bind(until)
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        if inserted.rows_affected() == 1 {
            return Ok(true);
        }
        // InnoDB locks the row and re-evaluates the condition on its latest version, so of two nodes racing for
        // an expired lease one matches and the other, after waiting, sees the winner's owner and matches nothing.
        // The connection reports rows matched, so renewing within the same millisecond still counts.
        let taken = sqlx::query(
            "UPDATE outbox_lease SET owner = ?, expires_at = ? WHERE id = 1 AND (owner = ? OR expires_at <= ?)",
        )
        .bind(owner)
        .bind(until)
        .bind(owner)
        .bind(now)
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(taken.rows_affected() == 1)
    }
}

#[async_trait::async_trait]
impl AuditStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.record_audit", skip_all, fields(tenant = %tenant))]
    async fn record_audit(&self, tenant: TenantId, e: &AuditEvent) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        // The unique `event_id` makes a redelivered event a conflict, which is the "already stored" answer.
        let done = palaver_store_sql::bind_audit!(
            sqlx::query(concat!(
                "INSERT INTO audit_log (event_id, actor_kind, actor_id, action, target_kind, target_id, topic, seqid, \
                 detail, client_ip, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ",
                millis_to_datetime!(),
                ")"
            )),
            e
        )
        .execute(&db.pool)
        .await;
        match done.map_err(db_error) {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    async fn list_audit(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<AuditEvent>> {
        let db = self.db(tenant).await?;
        let rows: Vec<AuditColumns> = sqlx::query_as(concat!(
            "SELECT event_id, actor_kind, actor_id, action, target_kind, target_id, topic, seqid, \
             CAST(detail AS CHAR), client_ip, ",
            datetime_to_millis!("created_at"),
            " FROM audit_log ORDER BY id DESC LIMIT ?"
        ))
        .bind(limit_col(limit))
        .fetch_all(&db.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter().map(|r| audit_of(tenant, r).map_err(StoreError::from)).collect()
    }
}
