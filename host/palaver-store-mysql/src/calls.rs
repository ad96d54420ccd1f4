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
    CALL_COLUMNS, CallRow, LIVE_CONDITION, PARTIES_CONDITION, SWEEP_CONDITION, SWEEP_ORDER, Transition, call_of,
    created_as,
};
use palaver_store_sql::{bind_busy_check, bind_new_call, bind_transition, new_call_columns};
use sqlx::{AssertSqlSafe, MySqlPool};

/// The row on the primary, so a read right after a transition sees it.
async fn call_row(pool: &MySqlPool, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
    let sql = format!("SELECT {CALL_COLUMNS} FROM im_calls WHERE topic = ? AND seq = ?");
    let query = sqlx::query_as(AssertSqlSafe(sql)).bind(topic).bind(seq);
    let row: Option<CallRow> = query.fetch_optional(pool).await.map_err(db_error)?;
    Ok(row.map(call_of).transpose()?)
}

/// Writes `change` if the call's state allows it, then reads the call back; `None` when no row changed.
async fn transition(pool: &MySqlPool, topic: &str, seq: Seq, change: Transition<'_>) -> StoreResult<Option<Call>> {
    let query = bind_transition!(sqlx::query(AssertSqlSafe(change.statement("topic = ? AND seq = ?"))), change);
    let done = query.bind(topic).bind(seq).execute(pool).await.map_err(db_error)?;
    if done.rows_affected() == 0 { Ok(None) } else { call_row(pool, topic, seq).await }
}

#[async_trait::async_trait]
impl CallStore for MysqlStore {
    async fn create_call(
        &self,
        tenant: TenantId,
        c: &Call,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<CallState> {
        let db = self.db(tenant).await?;
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
        let busy = bind_busy_check!(sqlx::query_scalar(AssertSqlSafe(sql)), c, started_since, accepted_since);
        let busy: Option<i32> = busy.fetch_optional(&mut *tx).await.map_err(db_error)?;
        let created = created_as(c, busy.is_some());
        let sql = concat!("INSERT INTO im_calls (", new_call_columns!(), ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        bind_new_call!(sqlx::query(sql), c, created).execute(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(created.0)
    }

    async fn get_call(&self, tenant: TenantId, topic: &str, seq: Seq) -> StoreResult<Option<Call>> {
        call_row(&self.db(tenant).await?.pool, topic, seq).await
    }

    async fn accept_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        callee_session: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        transition(&self.db(tenant).await?.pool, topic, seq, Transition::Accept { callee_session, at }).await
    }

    async fn end_call(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        end: CallEnd,
        reason: &str,
        at: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        transition(&self.db(tenant).await?.pool, topic, seq, Transition::End { end, reason, at }).await
    }

    async fn live_call_of(
        &self,
        tenant: TenantId,
        user: UserId,
        started_since: UnixMillis,
        accepted_since: UnixMillis,
    ) -> StoreResult<Option<Call>> {
        let db = self.db(tenant).await?;
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM im_calls WHERE (caller_id = ? OR callee_id = ?) \
             AND {LIVE_CONDITION} ORDER BY started_at DESC LIMIT 1"
        );
        let query = sqlx::query_as(AssertSqlSafe(sql)).bind(user_col(user)).bind(user_col(user));
        let query = query.bind(started_since).bind(accepted_since);
        let row: Option<CallRow> = query.fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(call_of).transpose()?)
    }

    async fn live_calls(
        &self,
        tenant: TenantId,
        since: UnixMillis,
        before: UnixMillis,
        limit: usize,
    ) -> StoreResult<Vec<Call>> {
        let db = self.db(tenant).await?;
        let sql = format!("SELECT {CALL_COLUMNS} FROM im_calls WHERE {SWEEP_CONDITION} {SWEEP_ORDER} LIMIT ?");
        let query = sqlx::query_as(AssertSqlSafe(sql)).bind(since).bind(before);
        let rows: Vec<CallRow> =
            query.bind(u64::try_from(limit).unwrap_or(u64::MAX)).fetch_all(&db.pool).await.map_err(db_error)?;
        Ok(rows.into_iter().map(call_of).collect::<Result<_, _>>()?)
    }
}
