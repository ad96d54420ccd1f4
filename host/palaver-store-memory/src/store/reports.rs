//! Abuse reports in the in-memory store: each tenant's reports by id, resolved once under the store's one lock.

use super::MemoryStore;
use async_trait::async_trait;
use palaver_core::ports::{NewReport, OutboxStore, QueueRecord, REPORT_CLOSED, Report, ReportStore, Resolution};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use std::collections::BTreeMap;

/// One tenant's reports.
#[derive(Default)]
pub(super) struct Reports {
    by_id: BTreeMap<i64, Report>,
    last_id: i64,
}

#[async_trait]
impl ReportStore for MemoryStore {
    async fn add_report(
        &self,
        tenant: TenantId,
        r: &NewReport,
        records: &[QueueRecord],
        now: UnixMillis,
    ) -> StoreResult<Report> {
        let report = self.with_tenant(tenant, |t| {
            t.reports.last_id += 1;
            let report = Report {
                id: t.reports.last_id,
                reporter: r.reporter,
                target_type: r.target_type,
                target: r.target.clone(),
                reason: r.reason.clone(),
                note: r.note.clone(),
                resolved: None,
                created: now,
            };
            t.reports.by_id.insert(report.id, report.clone());
            report
        });
        self.outbox.put(tenant, records).await?;
        Ok(report)
    }

    async fn count_reports_since(&self, tenant: TenantId, reporter: UserId, since: UnixMillis) -> StoreResult<u64> {
        Ok(self.with_tenant(tenant, |t| {
            t.reports.by_id.values().filter(|r| r.reporter == reporter && r.created >= since).count() as u64
        }))
    }

    async fn get_report(&self, tenant: TenantId, id: i64) -> StoreResult<Option<Report>> {
        Ok(self.with_tenant(tenant, |t| t.reports.by_id.get(&id).cloned()))
    }

    async fn list_reports(
        &self,
        tenant: TenantId,
        open_only: bool,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<Report>> {
        Ok(self.with_tenant(tenant, |t| {
            let below = t.reports.by_id.range(..cursor.unwrap_or(i64::MAX)).rev().map(|(_, r)| r);
            below.filter(|r| !open_only || r.resolved.is_none()).take(limit).cloned().collect()
        }))
    }

    async fn resolve_report(
        &self,
        tenant: TenantId,
        id: i64,
        resolution: &Resolution,
        records: &[QueueRecord],
    ) -> StoreResult<Report> {
        let report = self.with_tenant(tenant, |t| {
            let r = t.reports.by_id.get_mut(&id).ok_or(StoreError::NotFound)?;
            if r.resolved.is_some() {
                return Err(StoreError::Conflict(REPORT_CLOSED.to_owned()));
            }
            r.resolved = Some(resolution.clone());
            Ok(r.clone())
        })?;
        self.outbox.put(tenant, records).await?;
        Ok(report)
    }
}
