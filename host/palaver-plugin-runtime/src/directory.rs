//! The directory port behind the `directory` import: read-only views of the calling tenant's users, topics and
//! memberships. [`PortsDirectory`] reads them through palaver-core's storage ports; [`NoDirectory`] knows nobody
//! (golden fixtures and filters that need no lookups).

use palaver_core::ports::{SubscriptionStore, TopicStore, UserStore};
use palaver_core::{RecordState, StoreError, Subscription, TenantId, Topic, TopicKind, User, UserId};
use serde_json::Value;
use std::sync::Arc;

/// A user as plugins see it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInfo {
    pub id: UserId,
    pub active: bool,
    pub public: Option<Value>,
    pub tags: Vec<String>,
    pub created_ms: i64,
}

/// A topic as plugins see it.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicInfo {
    pub name: String,
    pub kind: TopicKind,
    pub owner: Option<UserId>,
    pub public: Option<Value>,
    pub tags: Vec<String>,
    pub created_ms: i64,
    pub seq: i64,
}

/// A membership as plugins see it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberInfo {
    pub topic: String,
    pub user: UserId,
    /// The effective access mode in Tinode's letters.
    pub mode: String,
    pub joined_ms: i64,
}

/// Why a directory read failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DirectoryError {
    /// The backing store is unreachable or failed.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for DirectoryError {
    fn from(e: StoreError) -> Self {
        DirectoryError::Unavailable(e.to_string())
    }
}

/// Read access to one tenant's users, topics and memberships.
#[async_trait::async_trait]
pub trait Directory: Send + Sync {
    /// The user, or `None`.
    async fn user(&self, tenant: TenantId, id: UserId) -> Result<Option<UserInfo>, DirectoryError>;

    /// The stored topic (`grp…`, `p2p…`), or `None`.
    async fn topic(&self, tenant: TenantId, name: &str) -> Result<Option<TopicInfo>, DirectoryError>;

    /// The user's active membership of the topic, or `None`.
    async fn member(&self, tenant: TenantId, topic: &str, user: UserId) -> Result<Option<MemberInfo>, DirectoryError>;

    /// The topic's active members, at most `limit`, in a stable order.
    async fn members(&self, tenant: TenantId, topic: &str, limit: usize) -> Result<Vec<MemberInfo>, DirectoryError>;
}

/// A directory that knows nobody.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDirectory;

#[async_trait::async_trait]
impl Directory for NoDirectory {
    async fn user(&self, _: TenantId, _: UserId) -> Result<Option<UserInfo>, DirectoryError> {
        Ok(None)
    }

    async fn topic(&self, _: TenantId, _: &str) -> Result<Option<TopicInfo>, DirectoryError> {
        Ok(None)
    }

    async fn member(&self, _: TenantId, _: &str, _: UserId) -> Result<Option<MemberInfo>, DirectoryError> {
        Ok(None)
    }

    async fn members(&self, _: TenantId, _: &str, _: usize) -> Result<Vec<MemberInfo>, DirectoryError> {
        Ok(Vec::new())
    }
}

/// The directory over palaver-core's storage ports.
#[derive(Clone)]
pub struct PortsDirectory {
    users: Arc<dyn UserStore>,
    topics: Arc<dyn TopicStore>,
    subs: Arc<dyn SubscriptionStore>,
}

impl PortsDirectory {
    /// A directory reading through these ports.
    pub fn new(
        users: Arc<dyn UserStore>,
        topics: Arc<dyn TopicStore>,
        subs: Arc<dyn SubscriptionStore>,
    ) -> PortsDirectory {
        PortsDirectory { users, topics, subs }
    }
}

fn user_info(u: User) -> UserInfo {
    UserInfo { id: u.id, active: u.state == RecordState::Active, public: u.public, tags: u.tags, created_ms: u.created }
}

fn topic_info(t: Topic) -> TopicInfo {
    TopicInfo {
        name: t.name,
        kind: t.kind,
        owner: t.owner,
        public: t.public,
        tags: t.tags,
        created_ms: t.created,
        seq: t.seq,
    }
}

fn member_info(s: Subscription) -> MemberInfo {
    MemberInfo { mode: s.mode().to_string(), topic: s.topic, user: s.user, joined_ms: s.created }
}

#[async_trait::async_trait]
impl Directory for PortsDirectory {
    async fn user(&self, tenant: TenantId, id: UserId) -> Result<Option<UserInfo>, DirectoryError> {
        Ok(self.users.get_user(tenant, id).await?.map(user_info))
    }

    async fn topic(&self, tenant: TenantId, name: &str) -> Result<Option<TopicInfo>, DirectoryError> {
        Ok(self.topics.get_topic(tenant, name).await?.map(topic_info))
    }

    async fn member(&self, tenant: TenantId, topic: &str, user: UserId) -> Result<Option<MemberInfo>, DirectoryError> {
        Ok(self.subs.get_sub(tenant, topic, user).await?.map(member_info))
    }

    async fn members(&self, tenant: TenantId, topic: &str, limit: usize) -> Result<Vec<MemberInfo>, DirectoryError> {
        let mut subs = self.subs.list_topic_subs(tenant, topic).await?;
        subs.truncate(limit);
        Ok(subs.into_iter().map(member_info).collect())
    }
}
