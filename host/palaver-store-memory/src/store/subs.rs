//! The subscription port of the in-memory store: memberships, access modes and read cursors.

use super::MemoryStore;
use palaver_core::ports::SubscriptionStore;
use palaver_core::{AccessMode, Seq, StoreError, StoreResult, Subscription, TenantId, UnixMillis, UserId};

impl MemoryStore {
    /// Runs `f` on the active subscription of `user` to `topic`, or answers `NotFound`.
    fn with_active_sub<R>(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        f: impl FnOnce(&mut Subscription) -> R,
    ) -> StoreResult<R> {
        self.with_tenant(tenant, |t| match t.subs.get_mut(&(topic.to_owned(), user)) {
            Some(sub) if sub.deleted.is_none() => Ok(f(sub)),
            _ => Err(StoreError::NotFound),
        })
    }
}

#[async_trait::async_trait]
impl SubscriptionStore for MemoryStore {
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            t.subs.insert((sub.topic.clone(), sub.user), sub.clone());
        });
        Ok(())
    }

    async fn get_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>> {
        Ok(self.with_tenant(tenant, |t| t.subs.get(&(topic.to_owned(), user)).filter(|s| s.deleted.is_none()).cloned()))
    }

    async fn list_user_subs(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Subscription>> {
        // The map is ordered by (topic, user), so filtering by user yields the subscriptions ordered by topic.
        Ok(self.with_tenant(tenant, |t| {
            t.subs.values().filter(|s| s.user == user && s.deleted.is_none()).cloned().collect()
        }))
    }

    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        Ok(self.with_tenant(tenant, |t| {
            t.subs
                .range((topic.to_owned(), UserId(0))..=(topic.to_owned(), UserId(u64::MAX)))
                .map(|(_, s)| s)
                .filter(|s| s.deleted.is_none())
                .cloned()
                .collect()
        }))
    }

    async fn update_sub_mode(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        want: AccessMode,
        given: AccessMode,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.with_active_sub(tenant, topic, user, |sub| {
            sub.want = want;
            sub.given = given;
            sub.updated = when;
        })
    }

    async fn update_sub_cursors(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)> {
        self.with_active_sub(tenant, topic, user, |sub| {
            sub.read = sub.read.max(read.unwrap_or(0));
            sub.recv = sub.recv.max(recv.unwrap_or(0)).max(sub.read);
            (sub.recv, sub.read)
        })
    }

    async fn delete_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.with_active_sub(tenant, topic, user, |sub| {
            sub.deleted = Some(when);
            sub.updated = when;
        })
    }

    async fn set_sub_private(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.with_active_sub(tenant, topic, user, |sub| {
            sub.private = private.cloned();
            sub.updated = when;
        })
    }

    async fn remove_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.with_active_sub(tenant, topic, user, |sub| {
            sub.deleted = Some(when);
            sub.updated = when;
            sub.given = AccessMode::NONE;
        })
    }

    async fn was_removed(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            t.subs.get(&(topic.to_owned(), user)).is_some_and(|s| s.deleted.is_some() && s.given == AccessMode::NONE)
        }))
    }
}
