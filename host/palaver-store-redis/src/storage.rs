//! `CachedStorage`: the four Redis decorators stacked over inner storage ports, sharing one `Coherence`, as a
//! single value that implements every storage port. The composition root hands it out as each of the four
//! `Arc<dyn …>` ports; the contract suite runs against it as one store.

use crate::cache::{CachedSubs, CachedTopics, CachedUsers};
use crate::client::RedisClient;
use crate::coherence::Coherence;
use crate::hot::HotMessages;
use crate::policy::HotPolicy;
use async_trait::async_trait;
use palaver_core::ports::{
    Identity, MessageStore, OwedFor, PendingAppend, QueueRecord, SubscriptionStore, TopicStore, UserStore,
};
use palaver_core::{
    AccessMode, AppendOutcome, AuditStatus, AuthRecord, DeleteMessages, Deletions, Message, MessageQuery, RecordState,
    Seq, StoreResult, Subscription, TenantId, Topic, TopicUpdate, UnixMillis, User, UserId, UserUpdate,
};
use std::sync::Arc;

/// Users, topics, subscriptions and messages with their Redis copies kept coherent with each other.
#[derive(Clone)]
pub struct CachedStorage {
    pub users: CachedUsers,
    pub topics: CachedTopics,
    pub subs: CachedSubs,
    pub messages: HotMessages,
}

impl std::fmt::Debug for CachedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedStorage").field("messages", &self.messages).finish_non_exhaustive()
    }
}

impl CachedStorage {
    /// Stacks the decorators over four inner ports (usually one adapter seen four ways).
    pub fn new(
        client: RedisClient,
        users: Arc<dyn UserStore>,
        topics: Arc<dyn TopicStore>,
        subs: Arc<dyn SubscriptionStore>,
        messages: Arc<dyn MessageStore>,
        policy: HotPolicy,
    ) -> Self {
        let redis = Coherence::new(client);
        Self {
            users: CachedUsers::with_coherence(redis.clone(), users),
            topics: CachedTopics::with_coherence(redis.clone(), topics),
            subs: CachedSubs::with_coherence(redis.clone(), subs),
            messages: HotMessages::with_coherence(redis, messages, policy),
        }
    }

    /// Stacks the decorators over one adapter that implements every storage port.
    pub fn over<S>(client: RedisClient, store: Arc<S>, policy: HotPolicy) -> Self
    where
        S: UserStore + TopicStore + SubscriptionStore + MessageStore + 'static,
    {
        Self::new(client, store.clone(), store.clone(), store.clone(), store, policy)
    }
}

#[async_trait]
impl UserStore for CachedStorage {
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        self.users.create_user(tenant, user, auth).await
    }
    async fn create_external_user(
        &self,
        tenant: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()> {
        self.users.create_external_user(tenant, user, auth, external_id).await
    }
    async fn find_external(&self, tenant: TenantId, external_id: &str) -> StoreResult<Option<UserId>> {
        self.users.find_external(tenant, external_id).await
    }
    async fn identity_of(&self, tenant: TenantId, id: UserId) -> StoreResult<Identity> {
        self.users.identity_of(tenant, id).await
    }
    async fn forget_identities(&self, tenant: TenantId, id: UserId) -> StoreResult<()> {
        self.users.forget_identities(tenant, id).await
    }
    async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<User>> {
        self.users.get_user(tenant, id).await
    }
    async fn update_user(&self, tenant: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()> {
        self.users.update_user(tenant, id, update).await
    }
    async fn touch_user(&self, tenant: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()> {
        self.users.touch_user(tenant, id, when, ua).await
    }
    async fn find_auth(&self, tenant: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        self.users.find_auth(tenant, login).await
    }
    async fn set_secret(
        &self,
        tenant: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        self.users.set_secret(tenant, id, secret_hash, owed).await
    }
    async fn revoke_tokens(
        &self,
        tenant: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        self.users.revoke_tokens(tenant, id, state, owed).await
    }
    async fn find_users_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>> {
        self.users.find_users_by_tags(tenant, tags, limit).await
    }
}

#[async_trait]
impl TopicStore for CachedStorage {
    async fn create_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()> {
        self.topics.create_topic(tenant, topic).await
    }
    async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        self.topics.get_topic(tenant, name).await
    }
    async fn update_topic(&self, tenant: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()> {
        self.topics.update_topic(tenant, name, update).await
    }
    async fn delete_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()> {
        self.topics.delete_topic(tenant, name).await
    }
    async fn find_topics_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>> {
        self.topics.find_topics_by_tags(tenant, tags, limit).await
    }
}

#[async_trait]
impl SubscriptionStore for CachedStorage {
    async fn upsert_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        self.subs.upsert_sub(tenant, sub).await
    }
    async fn get_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<Option<Subscription>> {
        self.subs.get_sub(tenant, topic, user).await
    }
    async fn list_user_subs(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Subscription>> {
        self.subs.list_user_subs(tenant, user).await
    }
    async fn list_topic_subs(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<Subscription>> {
        self.subs.list_topic_subs(tenant, topic).await
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
        self.subs.update_sub_mode(tenant, topic, user, want, given, when).await
    }
    async fn update_sub_cursors(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        recv: Option<Seq>,
        read: Option<Seq>,
    ) -> StoreResult<(Seq, Seq)> {
        self.subs.update_sub_cursors(tenant, topic, user, recv, read).await
    }
    async fn delete_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.subs.delete_sub(tenant, topic, user, when).await
    }
    async fn set_sub_private(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        private: Option<&serde_json::Value>,
        when: UnixMillis,
    ) -> StoreResult<()> {
        self.subs.set_sub_private(tenant, topic, user, private, when).await
    }
    async fn remove_sub(&self, tenant: TenantId, topic: &str, user: UserId, when: UnixMillis) -> StoreResult<()> {
        self.subs.remove_sub(tenant, topic, user, when).await
    }
    async fn was_removed(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<bool> {
        self.subs.was_removed(tenant, topic, user).await
    }
}

#[async_trait]
impl MessageStore for CachedStorage {
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        self.messages.append(tenant, msg).await
    }
    async fn queue_append(&self, tenant: TenantId, msg: &Message) -> StoreResult<PendingAppend> {
        self.messages.queue_append(tenant, msg).await
    }
    async fn find_by_client_mid(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>> {
        self.messages.find_by_client_mid(tenant, topic, from, client_mid).await
    }
    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq> {
        self.messages.max_seq(tenant, topic).await
    }
    async fn list_messages(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>> {
        self.messages.list_messages(tenant, topic, reader, query).await
    }
    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        self.messages.delete_messages(tenant, topic, request).await
    }
    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        self.messages.set_audit(tenant, topic, seq, audit, owed).await
    }
    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        self.messages.list_deletions(tenant, topic, reader).await
    }
}
