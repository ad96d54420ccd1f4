//! Abuse reports over a tenant database (`abuse_reports`, tenant migration 0007). A report and its summary for
//! the Admin side commit together (the `outbox` row in the same transaction); resolving reads the report `FOR
//! UPDATE`, so of two racing resolutions the second waits, then finds it closed.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, insert_id, limit_col, millis_to_datetime, user_col, user_of};
use crate::error::db_error;
use palaver_core::ports::{NewReport, QueueRecord, REPORT_CLOSED, Report, ReportStore, ReportTarget, Resolution};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};

type Row = (
    i64,
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    i64,
);

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

fn report_of(row: Row) -> StoreResult<Report> {
    let (id, reporter, target_type, target, reason, note, resolution, resolve_note, by, at, created) = row;
    let target_type = ReportTarget::parse(&target_type)
        .ok_or_else(|| StoreError::Internal(format!("abuse_reports.target_type {target_type:?} is not known")))?;
    let resolved = resolution.map(|resolution| Resolution {
        resolution,
        note: resolve_note,
        by: by.unwrap_or_default(),
        at: at.unwrap_or_default(),
    });
    Ok(Report { id, reporter: user_of(reporter), target_type, target, reason, note, resolved, created })
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
        let done = sqlx::query(concat!(
            "INSERT INTO abuse_reports (reporter_id, target_type, target, reason, note, created_at) \
             VALUES (?, ?, ?, ?, ?, ",
            millis_to_datetime!(),
            ")"
        ))
        .bind(user_col(r.reporter))
        .bind(r.target_type.as_str())
        .bind(&r.target)
        .bind(&r.reason)
        .bind(r.note.as_deref())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        let id = insert_id(&done)?;
        crate::outbox::append(&mut tx, records, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(Report {
            id,
            reporter: r.reporter,
            target_type: r.target_type,
            target: r.target.clone(),
            reason: r.reason.clone(),
            note: r.note.clone(),
            resolved: None,
            created: now,
        })
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
        row.map(report_of).transpose()
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
        rows.into_iter().map(report_of).collect()
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
