//! The subscription aggregate: who belongs to which topic, with which access and read position.

use crate::{AccessMode, Seq, StoreResult, Subscription, TenantId, UnixMillis, UserId};

/// Memberships.
#[async_trait::async_trait]
pub trait SubscriptionStore: Send + Sync {
    /// Inserts the subscription, or replaces an existing (also a soft-deleted) one for the same topic and user.
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()>;

    /// The active subscription of `user` to `topic`, or `None` (also when it was deleted).
    async fn get_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>>;

    /// The user's active subscriptions, in a stable order.
    async fn list_user_subs(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Subscription>>;

    /// The topic's active subscriptions, in a stable order.
    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>>;

    /// Changes the access mode. `NotFound` if there is no active subscription.
    async fn update_sub_mode(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        want: AccessMode,
        given: AccessMode,
        when: UnixMillis,
    ) -> StoreResult<()>;

    /// Raises the read and/or recv cursors, never lowering them; `recv` is raised to at least `read`.
    /// Returns the cursors after the change as `(recv, read)`. `NotFound` if there is no active subscription.
    async fn update_sub_cursors(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)>;

    /// Replaces the subscription's `private` value (`None` clears it). `NotFound` if there is no active
    /// subscription, so a write racing a removal never brings the subscription back.
    async fn set_sub_private(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()>;

    /// Soft-deletes the subscription. `NotFound` if there is no active subscription.
    async fn delete_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()>;

    /// Soft-deletes the subscription of a member someone else removed, keeping `given = N` on the row as the
    /// mark that the user may not rejoin with the topic's default access ([`SubscriptionStore::was_removed`]);
    /// an upsert (an invitation) lifts it. `NotFound` if there is no active subscription.
    async fn remove_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()>;

    /// True if the user's subscription to `topic` is deleted and was removed by someone else (or had nothing
    /// given when it ended): a ban that a plain join must honour.
    async fn was_removed(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<bool>;
}
