//! The call port over SQLite: the `im_calls` table of migration 0009. Every transition is one
//! `UPDATE … WHERE state …` on the writer, so a late or racing event changes no row; the row is read back after
//! a transition that took. A new call's busy check and insert are one `BEGIN IMMEDIATE` transaction: SQLite has
//! one writer, so no other start comes between them.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{Call, CallEnd, CallState, CallStore};
use palaver_core::{Seq, StoreResult, TenantId, UnixMillis, UserId};
// The statements built at run time join only constants of `palaver_store_sql::calls`; every value is bound.
use palaver_store_sql::calls::{
    CALL_COLUMNS, CallRow, LIVE_CONDITION, PARTIES_CONDITION, SWEEP_CONDITION, SWEEP_ORDER, Transition, call_of,
    created_as,
};
use palaver_store_sql::columns::user_col;
use palaver_store_sql::{bind_busy_check, bind_new_call, bind_transition, new_call_columns};
use sqlx::AssertSqlSafe;

impl SqliteStore {
    /// The row on the writer, so a read right after a transition sees it.
    async fn call_row(&self, tenant_id: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
        let sql = format!("SELECT {CALL_COLUMNS} FROM im_calls WHERE tenant_id = ? AND topic = ? AND seq = ?");
        let row: Option<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(seq)
            .fetch_optional(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(row.map(call_of).transpose()?)
    }

    /// Writes `change` if the call's state allows it, then reads the call back; `None` when no row changed.
    async fn transition(
        &self,
        tenant_id: TenantId,
        topic: &str,
        seq: Seq,
        change: Transition<'_>,
    ) -> StoreResult<Option<Call>> {
        let sql = change.statement("tenant_id = ? AND topic = ? AND seq = ?");
        let done = bind_transition!(sqlx::query(AssertSqlSafe(sql)), change)
            .bind(tenant(tenant_id))
            .bind(topic)
            .bind(seq)
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        match done.rows_affected() {
            0 => Ok(None),
            _ => self.call_row(tenant_id, topic, seq).await,
        }
    }
}

#[async_trait::async_trait]
impl CallStore for SqliteStore {
    async fn create_call(
        &self,
        tenant_id: TenantId,
        c: &Call,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<CallState> {
        let mut tx = self.begin_write().await?;
        let sql = format!("SELECT 1 FROM im_calls WHERE tenant_id = ? AND {PARTIES_CONDITION} AND {LIVE_CONDITION}");
        let busy = sqlx::query_scalar(AssertSqlSafe(sql)).bind(tenant(tenant_id));
        let busy: Option<i64> = bind_busy_check!(busy, c, started_since, accepted_since)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let created = created_as(c, busy.is_some());
        let sql = concat!(
            "INSERT INTO im_calls (tenant_id, ",
            new_call_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
        let insert = bind_new_call!(sqlx::query(sql).bind(tenant(tenant_id)), c, created);
        insert.execute(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(created.0)
    }

    async fn get_call(&self, tenant_id: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
        self.call_row(tenant_id, topic, seq).await
    }

    async fn accept_call(
        &self,
        tenant_id: TenantId,
        topic: &str,
        seq: Seq,
        callee_session: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        self.transition(tenant_id, topic, seq, Transition::Accept { callee_session, at }).await
    }

    async fn end_call(
        &self,
        tenant_id: TenantId,
        topic: &str,
        seq: Seq,
        end: CallEnd,
        reason: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        self.transition(tenant_id, topic, seq, Transition::End { end, reason, at }).await
    }

    async fn live_call_of(
        &self,
        tenant_id: TenantId,
        user: UserId,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM im_calls WHERE tenant_id = ? AND (caller_id = ? OR callee_id = ?) \
             AND {LIVE_CONDITION} ORDER BY started_at DESC LIMIT 1"
        );
        let row: Option<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .bind(user_col(user))
            .bind(started_since)
            .bind(accepted_since)
            .fetch_optional(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(row.map(call_of).transpose()?)
    }

    async fn live_calls(
        &self,
        tenant_id: TenantId,
        since: UnixMillis,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<Call>> {
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM im_calls WHERE tenant_id = ? AND {SWEEP_CONDITION} {SWEEP_ORDER} LIMIT ?"
        );
        let rows: Vec<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(tenant(tenant_id))
            .bind(since)
            .bind(before)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(call_of).collect::<Result<_, _>>()?)
    }
}
