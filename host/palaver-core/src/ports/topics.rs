//! The topic aggregate: groups and P2P conversations.

use crate::{StoreResult, TenantId, Topic, TopicUpdate};

/// Stored topics.
#[async_trait::async_trait]
pub trait TopicStore: Send + Sync {
    /// Stores a new topic. `Conflict` if the name exists.
    async fn create_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()>;

    /// The topic, or `None`.
    async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>>;

    /// Changes description fields. `NotFound` if there is no such topic.
    async fn update_topic(&self, tenant: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()>;

    /// Removes the topic with its subscriptions, messages and deletion log. `NotFound` if absent.
    async fn delete_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()>;

    /// Active group topics having any of `tags`, at most `limit`, in a stable order.
    async fn find_topics_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>>;
}
