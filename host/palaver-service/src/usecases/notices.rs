//! A user's system notifications: storing one, the pages and the unread count a badge shows, and read marks.
//! Expired notices count nowhere, so every read takes the caller's `now`.

use crate::Inner;
use palaver_core::ports::{NewNotification, Notification};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};

/// The notification use cases of one user of one tenant.
pub(crate) struct Notices<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
    pub(super) user: UserId,
}

impl Notices<'_> {
    /// Stores `new` (addressed to `new.user`, which may be another user than this view's).
    pub(crate) async fn add(&self, new: &NewNotification, now: UnixMillis) -> StoreResult<Notification> {
        self.svc.ports.business.notifications.add(self.tenant, new, now).await
    }

    /// A page of the user's notices, newest first, and the unread count beside it (read in the same call, so
    /// the badge a page shows matches the page).
    pub(crate) async fn page(
        &self,
        unread_only: bool,
        cursor: Option<i64>,
        limit: usize,
        now: UnixMillis,
    ) -> StoreResult<(Vec<Notification>, u64)> {
        let store = &self.svc.ports.business.notifications;
        let list = store.list(self.tenant, self.user, unread_only, cursor, limit, now).await?;
        let unread = store.unread_count(self.tenant, self.user, now).await?;
        Ok((list, unread))
    }

    /// How many of the user's live notices are unread.
    pub(crate) async fn unread(&self, now: UnixMillis) -> StoreResult<u64> {
        self.svc.ports.business.notifications.unread_count(self.tenant, self.user, now).await
    }

    /// Marks notice `id` read (`NotFound` unless it is the user's); true if it was unread.
    pub(crate) async fn mark_read(&self, id: i64, now: UnixMillis) -> StoreResult<bool> {
        self.svc.ports.business.notifications.mark_read(self.tenant, self.user, id, now).await
    }

    /// Marks every notice of the user read; how many were unread.
    pub(crate) async fn mark_all_read(&self, now: UnixMillis) -> StoreResult<u64> {
        self.svc.ports.business.notifications.mark_all_read(self.tenant, self.user, now).await
    }
}
