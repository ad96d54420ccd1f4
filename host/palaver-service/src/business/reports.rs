//! Abuse reports: `report.create` (`POST /v1/im/reports`), the host's own command (no plugin decides it), and
//! the Admin side's list. A report names a user, a group or a message that exists; its reason and note are
//! bounded, and each user files at most `limits.max_reports_per_hour` an hour. A new report's summary for the
//! Admin side (`im.admin.event`) is written with it; resolving one is the admin command `abuse.report.resolve`.

use super::{BizError, BizResult, Cx, body, time};
use crate::Service;
use palaver_api::bodies as b;
use palaver_api::{CommandName, Reason};
use palaver_core::ports::{NewReport, Report, ReportTarget};
use palaver_core::{TenantId, UserId};
use serde_json::Value;

/// Longest report reason and note, in characters.
pub(crate) const MAX_REASON: usize = 200;
pub(crate) const MAX_NOTE: usize = 1000;
const HOUR_MS: i64 = 3_600_000;

pub(super) async fn run(cx: &Cx<'_>) -> BizResult<Value> {
    match cx.command {
        CommandName::ReportCreate => create(cx).await,
        other => Err(super::unknown(other)),
    }
}

async fn create(cx: &Cx<'_>) -> BizResult<Value> {
    let target_type = cx.need_str("target_type")?;
    let target_type = ReportTarget::parse(target_type)
        .ok_or_else(|| BizError::new(Reason::BadTargetType, "target_type is user, message or group"))?;
    let target = cx.need_str("target")?.to_owned();
    let reason = cx.need_str("reason")?.to_owned();
    if reason.chars().count() > MAX_REASON {
        return Err(BizError::new(Reason::ReasonTooLong, format!("reason is at most {MAX_REASON} characters")));
    }
    let note = cx.str_arg("note").map(str::to_owned);
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE) {
        return Err(BizError::new(Reason::NoteTooLong, format!("note is at most {MAX_NOTE} characters")));
    }
    check_target(cx, target_type, &target).await?;
    let reports = cx.svc.reports(cx.tenant);
    let limit = cx.svc.cfg.max_reports_per_hour;
    if limit > 0 && reports.filed_since(cx.actor, cx.now - HOUR_MS).await? >= limit as u64 {
        return Err(BizError::new(Reason::ReportLimit, format!("at most {limit} reports an hour")));
    }
    let new = NewReport { reporter: cx.actor, target_type, target, reason, note };
    // The summary names the report by id, which the store assigns: the next id is not known before the insert,
    // so the summary carries the target and is keyed by the reporter; the Admin side pages reports by id.
    let summary = crate::admin::report_created_event(cx.tenant, &new);
    let report = reports.file(&new, &[summary], cx.now).await?;
    Ok(body(&b::ReportCreated { report: report_body(&report) }))
}

/// The target must exist: an active user, a live group, or a stored message of a topic (`{topic}:{seq}`).
async fn check_target(cx: &Cx<'_>, kind: ReportTarget, target: &str) -> BizResult<()> {
    let reports = cx.svc.reports(cx.tenant);
    let missing = || BizError::new(Reason::TargetNotFound, format!("no {} {target}", kind.as_str()));
    match kind {
        ReportTarget::User => {
            let user = UserId::parse(target).map_err(|_| BizError::new(Reason::BadTarget, "target is a usr… id"))?;
            if reports.user_reportable(user).await? { Ok(()) } else { Err(missing()) }
        }
        ReportTarget::Group => {
            if !target.starts_with("grp") || target.len() > 64 {
                return Err(BizError::new(Reason::BadTarget, "target is a grp… topic"));
            }
            if reports.group_reportable(target).await? { Ok(()) } else { Err(missing()) }
        }
        ReportTarget::Message => {
            let bad = || BizError::new(Reason::BadTarget, "target is {topic}:{seq}");
            let (topic, seq) = target.rsplit_once(':').ok_or_else(bad)?;
            let seq: i64 = seq.parse().ok().filter(|s| *s > 0).ok_or_else(bad)?;
            if !(topic.starts_with("grp") || topic.starts_with("p2p")) || topic.len() > 64 {
                return Err(bad());
            }
            if reports.message_reportable(topic, seq, cx.actor).await? { Ok(()) } else { Err(missing()) }
        }
    }
}

pub(crate) fn report_body(r: &Report) -> b::Report {
    b::Report {
        id: r.id,
        reporter: r.reporter.to_string(),
        target_type: r.target_type.as_str().to_owned(),
        target: r.target.clone(),
        reason: r.reason.clone(),
        note: r.note.clone(),
        status: if r.resolved.is_some() { "resolved" } else { "open" }.to_owned(),
        resolution: r.resolved.as_ref().map(|x| b::ReportResolution {
            resolution: x.resolution.clone(),
            note: x.note.clone(),
            by: x.by.clone(),
            at: time(x.at),
        }),
        created: time(r.created),
    }
}

impl Service {
    /// A page of the tenant's reports for the Admin side, newest first (`GET /v1/admin/tenants/{t}/reports`).
    pub async fn list_reports(
        &self,
        tenant: TenantId,
        open_only: bool,
        cursor: Option<i64>,
        limit: usize,
    ) -> BizResult<Value> {
        let limit = limit.clamp(1, super::MAX_PAGE);
        let reports = self.inner.reports(tenant).page(open_only, cursor, limit).await?;
        let next_cursor = if reports.len() >= limit { reports.last().map(|r| r.id) } else { None };
        Ok(body(&b::ReportPage { reports: reports.iter().map(report_body).collect(), next_cursor }))
    }
}
