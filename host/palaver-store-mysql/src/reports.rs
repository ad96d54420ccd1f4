//! Abuse reports over a tenant database (`abuse_reports`, tenant migration 0007). A report and its summary for
//! the Admin side commit together (the `outbox` row in the same transaction); resolving reads the report `FOR
//! UPDATE`, so of two racing resolutions the second waits, then finds it closed.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, insert_id, limit_col, millis_to_datetime, user_col};
use crate::error::db_error;
use palaver_core::ports::{NewReport, QueueRecord, REPORT_CLOSED, Report, ReportStore, Resolution};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::ledger::{ReportColumns, report_of};

type Row = ReportColumns;

/// The select list of a [`Row`], as a literal for `concat!`.
macro_rules! select {
    () => {
        concat!(
            "SELECT id, reporter_id, target_type, target, reason, note, resolution, resolve_note, resolved_by, ",
            datetime_to_millis!("resolved_at"),
            ", ",
            datetime_to_millis!("created_at"),
            " FROM abuse_reports "
        )
    };
}

#[async_trait::async_trait]
impl ReportStore for MysqlStore {
    async fn add_report(
        &self,
        tenant: TenantId,
        r: &NewReport,
        records: &[QueueRecord],
        now: UnixMillis,
    ) -> StoreResult<Report> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = palaver_store_sql::bind_report!(
            sqlx::query(concat!(
                "INSERT INTO abuse_reports (reporter_id, target_type, target, reason, note, created_at) \
             VALUES (?, ?, ?, ?, ?, ",
                millis_to_datetime!(),
                ")"
            )),
            r,
            now
        )
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        let id = insert_id(&done)?;
        crate::outbox::append(&mut tx, records, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(r.stored(id, now))
    }

    async fn count_reports_since(&self, tenant: TenantId, reporter: UserId, since: UnixMillis) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let n: i64 = sqlx::query_scalar(concat!(
            "SELECT COUNT(*) FROM abuse_reports WHERE reporter_id = ? AND created_at >= ",
            millis_to_datetime!()
        ))
        .bind(user_col(reporter))
        .bind(since)
        .fetch_one(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn get_report(&self, tenant: TenantId, id: i64) -> StoreResult<Option<Report>> {
        let db = self.db(tenant).await?;
        let row: Option<Row> = sqlx::query_as(concat!(select!(), "WHERE id = ?"))
            .bind(id)
            .fetch_optional(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(report_of).transpose()?)
    }

    async fn list_reports(
        &self,
        tenant: TenantId,
        open_only: bool,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<Report>> {
        let db = self.db(tenant).await?;
        let rows: Vec<Row> =
            sqlx::query_as(concat!(select!(), "WHERE (? = 0 OR status = 'open') AND id < ? ORDER BY id DESC LIMIT ?"))
                .bind(open_only)
                .bind(cursor.unwrap_or(i64::MAX))
                .bind(limit_col(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(db_error)?;
        Ok(rows.into_iter().map(report_of).collect::<Result<_, _>>()?)
    }

    async fn resolve_report(
        &self,
        tenant: TenantId,
        id: i64,
        res: &Resolution,
        records: &[QueueRecord],
    ) -> StoreResult<Report> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let row: Option<Row> = sqlx::query_as(concat!(select!(), "WHERE id = ? FOR UPDATE"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let mut report = report_of(row.ok_or(StoreError::NotFound)?)?;
        if report.resolved.is_some() {
            return Err(StoreError::Conflict(REPORT_CLOSED.to_owned()));
        }
        sqlx::query(concat!(
            "UPDATE abuse_reports SET status = 'resolved', resolution = ?, resolve_note = ?, resolved_by = ?, \
             resolved_at = ",
            millis_to_datetime!(),
            " WHERE id = ?"
        ))
        .bind(&res.resolution)
        .bind(res.note.as_deref())
        .bind(&res.by)
        .bind(res.at)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        crate::outbox::append(&mut tx, records, res.at).await?;
        tx.commit().await.map_err(db_error)?;
        report.resolved = Some(res.clone());
        Ok(report)
    }
}
