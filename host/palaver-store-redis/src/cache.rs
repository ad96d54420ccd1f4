//! Cache-aside decorators for users, topics and subscriptions: read Redis, on a miss read the
//! inner store and fill the copy for `cache_ttl_seconds`; write the inner store first, then drop the copy.
//!
//! A Redis failure on a read falls back to the inner store; a failed fill is only counted; a failed drop after
//! a successful write is logged and counted and never undoes the write (the copy then lives out its TTL).
//! Credentials are never cached: `find_auth` and `set_secret` go straight through, and `User` holds no hash.
//! Lists and searches are not cached either: they change with every membership and tag write.

use crate::client::RedisClient;
use crate::coherence::Coherence;
use async_trait::async_trait;
use palaver_core::ports::{Identity, QueueRecord, SubscriptionStore, TopicStore, UserStore};
use palaver_core::{
    AccessMode, AuthRecord, RecordState, Seq, StoreError, StoreResult, Subscription, TenantId, Topic, TopicUpdate,
    UnixMillis, User, UserId, UserUpdate,
};
use std::future::Future;
use std::sync::Arc;
use tracing::Instrument;

/// The cached copy, or `None` on a miss or a Redis fault, which the caller answers from the inner store.
async fn cached<T>(redis: &Coherence, what: &str, read: impl Future<Output = StoreResult<Option<T>>>) -> Option<T> {
    let metrics = redis.client.metrics();
    match read.await {
        Ok(Some(hit)) => {
            metrics.cache_hit();
            return Some(hit);
        }
        Ok(None) => metrics.cache_miss(),
        Err(StoreError::Internal(e)) => {
            // An undecodable copy is a miss; the fill that follows replaces it.
            tracing::warn!(error = %e, "cached {what} unreadable; reading the store");
            metrics.cache_miss();
        }
        Err(e) => {
            tracing::warn!(error = %e, "cache read of {what} failed; reading the store");
            metrics.fallback();
        }
    }
    None
}

/// Counts a copy that could not be written; the read still succeeds.
fn filled(redis: &Coherence, what: &str, result: StoreResult<()>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "could not cache {what}");
        redis.client.metrics().fill_failed();
    }
}

/// Logs and counts a copy that could not be dropped after a successful write.
fn invalidated(redis: &Coherence, what: &str, result: StoreResult<()>) {
    if result.is_ok() {
        redis.client.metrics().invalidated();
    }
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not drop cached {what} after a write; it may be stale until its TTL");
        redis.client.metrics().invalidation_failed();
    }
}

/// Users with their records cached.
#[derive(Clone)]
pub struct CachedUsers {
    inner: Arc<dyn UserStore>,
    redis: Coherence,
}

impl CachedUsers {
    pub fn new(client: RedisClient, inner: Arc<dyn UserStore>) -> Self {
        Self { inner, redis: Coherence::new(client) }
    }

    pub(crate) fn with_coherence(redis: Coherence, inner: Arc<dyn UserStore>) -> Self {
        Self { inner, redis }
    }
}

#[async_trait]
impl UserStore for CachedUsers {
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        self.inner.create_user(tenant, user, auth).await?;
        invalidated(&self.redis, "user", self.redis.invalidate_user(tenant, user.id).await);
        Ok(())
    }

    async fn create_external_user(
        &self,
        tenant: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()> {
        self.inner.create_external_user(tenant, user, auth, external_id).await?;
        invalidated(&self.redis, "user", self.redis.invalidate_user(tenant, user.id).await);
        Ok(())
    }

    async fn find_external(&self, tenant: TenantId, external_id: &str) -> StoreResult<Option<UserId>> {
        self.inner.find_external(tenant, external_id).await
    }

    async fn identity_of(&self, tenant: TenantId, id: UserId) -> StoreResult<Identity> {
        self.inner.identity_of(tenant, id).await
    }

    async fn forget_identities(&self, tenant: TenantId, id: UserId) -> StoreResult<()> {
        self.inner.forget_identities(tenant, id).await
    }

    async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<User>> {
        let span = tracing::debug_span!("cache.get_user", tenant = tenant.0, user = id.0);
        async {
            if let Some(hit) = cached(&self.redis, "user", self.redis.get_user(tenant, id)).await {
                return Ok(Some(hit));
            }
            let found = self.inner.get_user(tenant, id).await?;
            if let Some(user) = &found {
                filled(&self.redis, "user", self.redis.fill_user(tenant, user).await);
            }
            Ok(found)
        }
        .instrument(span)
        .await
    }

    async fn update_user(&self, tenant: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()> {
        self.inner.update_user(tenant, id, update).await?;
        invalidated(&self.redis, "user", self.redis.invalidate_user(tenant, id).await);
        Ok(())
    }

    async fn touch_user(&self, tenant: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()> {
        self.inner.touch_user(tenant, id, when, ua).await?;
        invalidated(&self.redis, "user", self.redis.invalidate_user(tenant, id).await);
        Ok(())
    }

    async fn find_auth(&self, tenant: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        self.inner.find_auth(tenant, login).await
    }

    async fn set_secret(
        &self,
        tenant: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let version = self.inner.set_secret(tenant, id, secret_hash, owed).await?;
        // The cached user carries `auth_version`, which revokes older tokens: a stale copy would keep them
        // valid, so a failed drop is retried once before it is only logged.
        if self.redis.invalidate_user(tenant, id).await.is_err() {
            invalidated(&self.redis, "user after a password change", self.redis.invalidate_user(tenant, id).await);
        }
        Ok(version)
    }

    async fn revoke_tokens(
        &self,
        tenant: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let version = self.inner.revoke_tokens(tenant, id, state, owed).await?;
        if self.redis.invalidate_user(tenant, id).await.is_err() {
            invalidated(&self.redis, "user after revoking tokens", self.redis.invalidate_user(tenant, id).await);
        }
        Ok(version)
    }

    async fn find_users_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>> {
        self.inner.find_users_by_tags(tenant, tags, limit).await
    }
}

/// Topics with their records cached. Appends and deletions patch the cached `seq`, `touched` and `del_id`
/// through [`crate::HotMessages`], which must wrap the message port of the same stack.
#[derive(Clone)]
pub struct CachedTopics {
    inner: Arc<dyn TopicStore>,
    redis: Coherence,
}

impl CachedTopics {
    pub fn new(client: RedisClient, inner: Arc<dyn TopicStore>) -> Self {
        Self { inner, redis: Coherence::new(client) }
    }

    pub(crate) fn with_coherence(redis: Coherence, inner: Arc<dyn TopicStore>) -> Self {
        Self { inner, redis }
    }
}

#[async_trait]
impl TopicStore for CachedTopics {
    async fn create_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()> {
        self.inner.create_topic(tenant, topic).await?;
        invalidated(&self.redis, "topic", self.redis.invalidate_topic(tenant, &topic.name).await);
        Ok(())
    }

    async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        let span = tracing::debug_span!("cache.get_topic", tenant = tenant.0, topic = name);
        async {
            if let Some(mut hit) = cached(&self.redis, "topic", self.redis.get_topic(tenant, name)).await {
                // A stored message whose raise of the cached `seq` is still on its way from this node: the copy
                // may be behind what this node acknowledged, so it is raised here as the write will raise it.
                if let Some(w) = self.redis.copies_waiting(tenant, name) {
                    hit.seq = hit.seq.max(w.seq);
                    hit.touched = hit.touched.max(w.created);
                }
                return Ok(Some(hit));
            }
            let found = self.inner.get_topic(tenant, name).await?;
            if let Some(topic) = &found {
                filled(&self.redis, "topic", self.redis.fill_topic(tenant, topic).await);
            }
            Ok(found)
        }
        .instrument(span)
        .await
    }

    async fn update_topic(&self, tenant: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()> {
        self.inner.update_topic(tenant, name, update).await?;
        invalidated(&self.redis, "topic", self.redis.invalidate_topic(tenant, name).await);
        Ok(())
    }

    async fn delete_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()> {
        self.inner.delete_topic(tenant, name).await?;
        // The inner store removed the topic's subscriptions and history with it, so every copy goes too.
        invalidated(&self.redis, "topic and its copies", self.redis.on_delete_topic(tenant, name).await);
        Ok(())
    }

    async fn find_topics_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>> {
        self.inner.find_topics_by_tags(tenant, tags, limit).await
    }
}

/// Subscriptions with single memberships (`get_sub`) cached, the read on every note and permission check.
#[derive(Clone)]
pub struct CachedSubs {
    inner: Arc<dyn SubscriptionStore>,
    redis: Coherence,
}

impl CachedSubs {
    pub fn new(client: RedisClient, inner: Arc<dyn SubscriptionStore>) -> Self {
        Self { inner, redis: Coherence::new(client) }
    }

    pub(crate) fn with_coherence(redis: Coherence, inner: Arc<dyn SubscriptionStore>) -> Self {
        Self { inner, redis }
    }

    async fn dropped(&self, tenant: TenantId, topic: &str, user: UserId) {
        invalidated(&self.redis, "subscription", self.redis.invalidate_sub(tenant, topic, user).await);
    }
}

#[async_trait]
impl SubscriptionStore for CachedSubs {
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        self.inner.upsert_sub(tenant, sub).await?;
        self.dropped(tenant, &sub.topic, sub.user).await;
        Ok(())
    }

    async fn get_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>> {
        let span = tracing::debug_span!("cache.get_sub", tenant = tenant.0, topic, user = user.0);
        async {
            if let Some(hit) = cached(&self.redis, "subscription", self.redis.get_sub(tenant, topic, user)).await {
                return Ok(Some(hit));
            }
            let found = self.inner.get_sub(tenant, topic, user).await?;
            if let Some(sub) = &found {
                filled(&self.redis, "subscription", self.redis.fill_sub(tenant, sub).await);
            }
            Ok(found)
        }
        .instrument(span)
        .await
    }

    async fn list_user_subs(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Subscription>> {
        self.inner.list_user_subs(tenant, user).await
    }

    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        self.inner.list_topic_subs(tenant, topic).await
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
        self.inner.update_sub_mode(tenant, topic, user, want, given, when).await?;
        self.dropped(tenant, topic, user).await;
        Ok(())
    }

    async fn update_sub_cursors(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)> {
        let cursors = self.inner.update_sub_cursors(tenant, topic, user, recv, read).await?;
        self.dropped(tenant, topic, user).await;
        Ok(cursors)
    }

    async fn delete_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.inner.delete_sub(tenant, topic, user, when).await?;
        self.dropped(tenant, topic, user).await;
        Ok(())
    }

    async fn set_sub_private(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.inner.set_sub_private(tenant, topic, user, private, when).await?;
        self.dropped(tenant, topic, user).await;
        Ok(())
    }

    async fn remove_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.inner.remove_sub(tenant, topic, user, when).await?;
        self.dropped(tenant, topic, user).await;
        Ok(())
    }

    async fn was_removed(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<bool> {
        // Read rarely (a join without a subscription), so it is not cached.
        self.inner.was_removed(tenant, topic, user).await
    }
}
