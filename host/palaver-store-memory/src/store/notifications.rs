//! The notification port of the in-memory store: each tenant's notices in one map by id.
//!
//! Every call runs under the store's one lock, so a notice is marked read at most once even when two calls race,
//! which the SQL adapters get from a guarded `UPDATE`.

use super::MemoryStore;
use palaver_core::ports::{NewNotification, Notification, NotificationStore};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use std::collections::BTreeMap;

/// One tenant's notifications.
#[derive(Default)]
pub(super) struct Notifications {
    /// Notices by id; ids rise with creation, like an auto-increment column.
    by_id: BTreeMap<i64, Notification>,
    last_id: i64,
}

impl Notifications {
    /// The user's notices that are alive at `now`, newest first, starting strictly below `cursor`.
    fn live(&self, user: UserId, cursor: Option<i64>, now: UnixMillis) -> impl Iterator<Item = &Notification> {
        self.by_id
            .range(..cursor.unwrap_or(i64::MAX))
            .rev()
            .map(|(_, n)| n)
            .filter(move |n| n.user == user && !n.expired(now))
    }
}

#[async_trait::async_trait]
impl NotificationStore for MemoryStore {
    async fn add(&self, tenant: TenantId, n: &NewNotification, now: UnixMillis) -> StoreResult<Notification> {
        Ok(self.with_tenant(tenant, |t| {
            let ns = &mut t.notifications;
            ns.last_id += 1;
            let stored = n.stored(ns.last_id, now);
            ns.by_id.insert(stored.id, stored.clone());
            stored
        }))
    }

    async fn list(
        &self,
        tenant: TenantId,
        user: UserId,
        unread_only: bool,
        cursor: Option<i64>,
        limit: usize,
        now: UnixMillis,
    ) -> StoreResult<Vec<Notification>> {
        Ok(self.with_tenant(tenant, |t| {
            let live = t.notifications.live(user, cursor, now);
            live.filter(|n| !unread_only || n.read.is_none()).take(limit).cloned().collect()
        }))
    }

    async fn mark_read(&self, tenant: TenantId, user: UserId, id: i64, now: UnixMillis) -> StoreResult<bool> {
        self.with_tenant(tenant, |t| {
            let n = t.notifications.by_id.get_mut(&id).filter(|n| n.user == user && !n.expired(now));
            let n = n.ok_or(StoreError::NotFound)?;
            if n.read.is_some() {
                return Ok(false);
            }
            n.read = Some(now);
            Ok(true)
        })
    }

    async fn mark_all_read(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        Ok(self.with_tenant(tenant, |t| {
            let mut changed = 0;
            for n in t.notifications.by_id.values_mut() {
                if n.user == user && n.read.is_none() && !n.expired(now) {
                    n.read = Some(now);
                    changed += 1;
                }
            }
            changed
        }))
    }

    async fn unread_count(&self, tenant: TenantId, user: UserId, now: UnixMillis) -> StoreResult<u64> {
        Ok(self
            .with_tenant(tenant, |t| t.notifications.live(user, None, now).filter(|n| n.read.is_none()).count() as u64))
    }
}
