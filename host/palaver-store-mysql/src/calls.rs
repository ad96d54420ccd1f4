//! The call port over a tenant database: the `im_calls` table of migration 0009. Every transition is one
//! `UPDATE … WHERE state …` on the primary, so a late or racing event changes no row; the row is read back after
//! a transition that took. A new call first locks both parties' rows of `im_call_parties` (migration 0010), in
//! key order so two starts never deadlock, then checks whether either is busy and inserts itself: starts that
//! share a party run one after the other, so the second sees the first.

use crate::MysqlStore;
use crate::codec::user_col;
use crate::error::db_error;
use palaver_core::ports::{Call, CallEnd, CallState, CallStore};
use palaver_core::{Seq, StoreResult, TenantId, UnixMillis, UserId};
// The statements built at run time join only constants of `palaver_store_sql::calls`; every value is bound.
use palaver_store_sql::calls::{
    CALL_COLUMNS, CallRow, END_SET, LIVE_CONDITION, PARTIES_CONDITION, SWEEP_CONDITION, SWEEP_ORDER, call_of,
    created_as, end_condition,
};
use sqlx::AssertSqlSafe;

impl MysqlStore {
    /// The row on the primary, so a read right after a transition sees it.
    async fn call_row(&self, tenant_id: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
        let db = self.db(tenant_id).await?;
        let sql = format!("SELECT {CALL_COLUMNS} FROM im_calls WHERE topic = ? AND seq = ?");
        let row: Option<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(topic)
            .bind(seq)
            .fetch_optional(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(call_of).transpose()?)
    }

    /// The call after a transition: read back if its conditional update changed the row, else `None`.
    async fn after(&self, tenant_id: TenantId, topic: &str, seq: Seq, changed: u64) -> StoreResult<Option<Call>> {
        if changed == 0 {
            return Ok(None);
        }
        self.call_row(tenant_id, topic, seq).await
    }
}

#[async_trait::async_trait]
impl CallStore for MysqlStore {
    async fn create_call(
        &self,
        tenant_id: TenantId,
        c: &Call,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<CallState> {
        let db = self.db(tenant_id).await?;
        let (caller, callee) = (user_col(c.caller), user_col(c.callee));
        // The lock rows exist before the transaction: inserting them inside it would take shared locks on the
        // ones already there, which two starts could then not both upgrade. In key order, like the locking read
        // below, so this statement never holds one party's row while it waits for the other's.
        let (low, high) = (caller.min(callee), caller.max(callee));
        sqlx::query("INSERT IGNORE INTO im_call_parties (user_id) VALUES (?), (?)")
            .bind(low)
            .bind(high)
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        sqlx::query("SELECT user_id FROM im_call_parties WHERE user_id IN (?, ?) ORDER BY user_id FOR UPDATE")
            .bind(caller)
            .bind(callee)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
        // The transaction's first plain read, so its snapshot is taken after the locks: every start that held
        // them before has committed and is seen.
        let sql = format!("SELECT 1 FROM im_calls WHERE {PARTIES_CONDITION} AND {LIVE_CONDITION} LIMIT 1");
        let busy: Option<i32> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(caller)
            .bind(callee)
            .bind(caller)
            .bind(callee)
            .bind(started_since)
            .bind(accepted_since)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let (state, ended_at, reason) = created_as(c, busy.is_some());
        sqlx::query(
            "INSERT INTO im_calls (topic, seq, caller_id, callee_id, caller_session, callee_session, \
             audio_only, state, started_at, ended_at, end_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&c.topic)
        .bind(c.seq)
        .bind(user_col(c.caller))
        .bind(user_col(c.callee))
        .bind(&c.caller_session)
        .bind(&c.callee_session)
        .bind(c.audio_only)
        .bind(state.as_str())
        .bind(c.started_at)
        .bind(ended_at)
        .bind(reason)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(state)
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
        let db = self.db(tenant_id).await?;
        let done = sqlx::query(
            "UPDATE im_calls SET state = 'accepted', accepted_at = ?, callee_session = ? \
             WHERE topic = ? AND seq = ? AND state = 'started'",
        )
        .bind(at)
        .bind(callee_session)
        .bind(topic)
        .bind(seq)
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        self.after(tenant_id, topic, seq, done.rows_affected()).await
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
        let db = self.db(tenant_id).await?;
        let sql = format!("UPDATE im_calls SET {END_SET} WHERE topic = ? AND seq = ? AND {}", end_condition(end));
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(end.state().as_str())
            .bind(at)
            .bind(at)
            .bind(reason)
            .bind(topic)
            .bind(seq)
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        self.after(tenant_id, topic, seq, done.rows_affected()).await
    }

    async fn live_call_of(
        &self,
        tenant_id: TenantId,
        user: UserId,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        let db = self.db(tenant_id).await?;
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM im_calls WHERE (caller_id = ? OR callee_id = ?) \
             AND {LIVE_CONDITION} ORDER BY started_at DESC LIMIT 1"
        );
        let row: Option<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(user_col(user))
            .bind(user_col(user))
            .bind(started_since)
            .bind(accepted_since)
            .fetch_optional(&db.pool)
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
        let db = self.db(tenant_id).await?;
        let sql = format!("SELECT {CALL_COLUMNS} FROM im_calls WHERE {SWEEP_CONDITION} {SWEEP_ORDER} LIMIT ?");
        let rows: Vec<CallRow> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(since)
            .bind(before)
            .bind(u64::try_from(limit).unwrap_or(u64::MAX))
            .fetch_all(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(call_of).collect::<Result<_, _>>()?)
    }
}
