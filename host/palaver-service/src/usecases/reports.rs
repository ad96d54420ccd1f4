//! Abuse reports: what a report may name (an active user, a live group, a message its reporter could read),
//! the hourly count a reporter's limit is checked against, filing one with its summary for the Admin side, and
//! the Admin side's pages.

use crate::Inner;
use palaver_core::ports::{NewReport, QueueRecord, Report};
use palaver_core::{RecordState, Seq, StoreResult, TenantId, UnixMillis, UserId};

/// The report use cases of one tenant.
pub(crate) struct Reports<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Reports<'_> {
    /// True if `user` exists and is active.
    pub(crate) async fn user_reportable(&self, user: UserId) -> StoreResult<bool> {
        let u = self.svc.ports.users.get_user(self.tenant, user).await?;
        Ok(u.is_some_and(|u| u.state == RecordState::Active))
    }

    /// True if the group `topic` is stored.
    pub(crate) async fn group_reportable(&self, topic: &str) -> StoreResult<bool> {
        Ok(self.svc.ports.topics.get_topic(self.tenant, topic).await?.is_some())
    }

    /// True if message `seq` of `topic` exists and `reader` subscribes to the topic: only a reader of the topic
    /// can have seen the message.
    pub(crate) async fn message_reportable(&self, topic: &str, seq: Seq, reader: UserId) -> StoreResult<bool> {
        let sub = self.svc.ports.subs.get_sub(self.tenant, topic, reader).await?;
        let t = self.svc.ports.topics.get_topic(self.tenant, topic).await?;
        Ok(matches!((sub, t), (Some(_), Some(t)) if seq <= t.seq))
    }

    /// How many reports `reporter` filed since `since`.
    pub(crate) async fn filed_since(&self, reporter: UserId, since: UnixMillis) -> StoreResult<u64> {
        self.svc.ports.business.reports.count_reports_since(self.tenant, reporter, since).await
    }

    /// Files `new` with the records owed to the task queue, in one transaction.
    pub(crate) async fn file(&self, new: &NewReport, owed: &[QueueRecord], now: UnixMillis) -> StoreResult<Report> {
        self.svc.ports.business.reports.add_report(self.tenant, new, owed, now).await
    }

    /// A page of the tenant's reports, newest first.
    pub(crate) async fn page(&self, open_only: bool, cursor: Option<i64>, limit: usize) -> StoreResult<Vec<Report>> {
        self.svc.ports.business.reports.list_reports(self.tenant, open_only, cursor, limit).await
    }
}
