//! Abuse reports: a user reports a user, a message or a group; the Admin side lists them and resolves each one
//! once (`abuse.report.resolve`). Every state change writes its summary for the Admin side (`admin_event`) to
//! the outbox in the same transaction as the change, where the adapter has an outbox.

use crate::ports::QueueRecord;
use crate::{StoreResult, TenantId, UnixMillis, UserId};

/// The `Conflict` reason when a report is resolved a second time.
pub const REPORT_CLOSED: &str = "report closed";

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportTarget {
    User,
    Message,
    Group,
}

impl ReportTarget {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportTarget::User => "user",
            ReportTarget::Message => "message",
            ReportTarget::Group => "group",
        }
    }

    pub fn parse(s: &str) -> Option<ReportTarget> {
        match s {
            "user" => Some(ReportTarget::User),
            "message" => Some(ReportTarget::Message),
            "group" => Some(ReportTarget::Group),
            _ => None,
        }
    }
}

/// A report to store; the store assigns the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReport {
    pub reporter: UserId,
    pub target_type: ReportTarget,
    /// `usr…`, `grp…`, or `{topic}:{seq}` for a message.
    pub target: String,
    pub reason: String,
    pub note: Option<String>,
}

impl NewReport {
    /// The report as stored under `id` at `now`: open, with everything else as given.
    pub fn stored(&self, id: i64, now: UnixMillis) -> Report {
        Report {
            id,
            reporter: self.reporter,
            target_type: self.target_type,
            target: self.target.clone(),
            reason: self.reason.clone(),
            note: self.note.clone(),
            resolved: None,
            created: now,
        }
    }
}

/// A stored report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Unique within the tenant and increasing with creation: the paging cursor.
    pub id: i64,
    pub reporter: UserId,
    pub target_type: ReportTarget,
    pub target: String,
    pub reason: String,
    pub note: Option<String>,
    /// `open` until resolved, then the resolution.
    pub resolved: Option<Resolution>,
    pub created: UnixMillis,
}

/// How a report was closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The Admin side's word for the outcome (`dismissed`, `actioned`, …).
    pub resolution: String,
    pub note: Option<String>,
    /// Who resolved it, as the command's actor named them.
    pub by: String,
    pub at: UnixMillis,
}

/// Each tenant's abuse reports.
#[async_trait::async_trait]
pub trait ReportStore: Send + Sync {
    /// Stores a new, open report created at `now`, with `records` (its summary) appended to the outbox in the same
    /// transaction. Returns it with its id.
    async fn add_report(
        &self,
        tenant: TenantId,
        report: &NewReport,
        records: &[QueueRecord],
        now: UnixMillis,
    ) -> StoreResult<Report>;

    /// How many reports `reporter` filed at or after `since` (the per-user limit).
    async fn count_reports_since(&self, tenant: TenantId, reporter: UserId, since: UnixMillis) -> StoreResult<u64>;

    /// One report; `None` for an unknown id.
    async fn get_report(&self, tenant: TenantId, id: i64) -> StoreResult<Option<Report>>;

    /// Reports newest (highest id) first, at most `limit`, strictly below the id `cursor`, only the open ones if
    /// `open_only`.
    async fn list_reports(
        &self,
        tenant: TenantId,
        open_only: bool,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<Report>>;

    /// Closes an open report with `resolution` and appends `records` to the outbox in the same transaction.
    /// `NotFound` for an unknown id, `Conflict(REPORT_CLOSED)` if it was resolved already (once, also under a race).
    async fn resolve_report(
        &self,
        tenant: TenantId,
        id: i64,
        resolution: &Resolution,
        records: &[QueueRecord],
    ) -> StoreResult<Report>;
}
