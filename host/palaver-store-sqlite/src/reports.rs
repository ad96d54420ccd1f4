//! Abuse reports over SQLite (`abuse_reports`, migration 0007). A report and its summary for the Admin side
//! commit together (the `outbox` row in the same transaction); resolving is one guarded `UPDATE` (only while
//! `status = 'open'`), so of two racing resolutions exactly one closes the report.

use crate::SqliteStore;
use crate::codec::{limit_col, tenant, user_col};
use crate::error::db_error;
use palaver_core::ports::{NewReport, QueueRecord, REPORT_CLOSED, Report, ReportStore, Resolution};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::ledger::{ReportColumns, report_of};

/// The columns of a [`Row`], as a literal for `concat!`.
macro_rules! columns {
    () => {
        "id, reporter_id, target_type, target, reason, note, resolution, resolve_note, resolved_by, resolved_at, \
         created_at"
    };
}

/// One report by id.
const SELECT: &str = concat!("SELECT ", columns!(), " FROM abuse_reports WHERE tenant_id = ? AND id = ?");

type Row = ReportColumns;

#[async_trait::async_trait]
impl ReportStore for SqliteStore {
    async fn add_report(
        &self,
        tenant_id: TenantId,
        r: &NewReport,
        records: &[QueueRecord],
        now: UnixMillis,
    ) -> StoreResult<Report> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let done = palaver_store_sql::bind_report!(
            sqlx::query(
                "INSERT INTO abuse_reports (tenant_id, reporter_id, target_type, target, reason, note, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(t),
            r,
            now
        )
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        crate::outbox::append(&mut tx, t, records, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(r.stored(done.last_insert_rowid(), now))
    }

    async fn count_reports_since(&self, tenant_id: TenantId, reporter: UserId, since: UnixMillis) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM abuse_reports WHERE tenant_id = ? AND reporter_id = ? AND created_at >= ?",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(reporter))
        .bind(since)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn get_report(&self, tenant_id: TenantId, id: i64) -> StoreResult<Option<Report>> {
        let row: Option<Row> = sqlx::query_as(SELECT)
            .bind(tenant(tenant_id))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(report_of).transpose()?)
    }

    async fn list_reports(
        &self,
        tenant_id: TenantId,
        open_only: bool,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<Report>> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM abuse_reports WHERE tenant_id = ?1 AND (?2 = 0 OR status = 'open') AND id < ?3 \
             ORDER BY id DESC LIMIT ?4"
        );
        let rows: Vec<Row> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(open_only)
            .bind(cursor.unwrap_or(i64::MAX))
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(report_of).collect::<Result<_, _>>()?)
    }

    async fn resolve_report(
        &self,
        tenant_id: TenantId,
        id: i64,
        res: &Resolution,
        records: &[QueueRecord],
    ) -> StoreResult<Report> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "UPDATE abuse_reports SET status = 'resolved', resolution = ?, resolve_note = ?, resolved_by = ?, \
             resolved_at = ? WHERE tenant_id = ? AND id = ? AND status = 'open'",
        )
        .bind(&res.resolution)
        .bind(res.note.as_deref())
        .bind(&res.by)
        .bind(res.at)
        .bind(t)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        let row: Option<Row> =
            sqlx::query_as(SELECT).bind(t).bind(id).fetch_optional(&mut *tx).await.map_err(db_error)?;
        let report = report_of(row.ok_or(StoreError::NotFound)?)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict(REPORT_CLOSED.to_owned()));
        }
        crate::outbox::append(&mut tx, t, records, res.at).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(report)
    }
}
