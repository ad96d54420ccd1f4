//! The topic port of the in-memory store: group and P2P topic descriptions and tag search.

use super::MemoryStore;
use palaver_core::ports::TopicStore;
use palaver_core::{RecordState, StoreError, StoreResult, TenantId, Topic, TopicKind, TopicUpdate};

#[async_trait::async_trait]
impl TopicStore for MemoryStore {
    async fn create_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            if t.topics.contains_key(&topic.name) {
                return Err(StoreError::Conflict(format!("topic {} exists", topic.name)));
            }
            t.topics.insert(topic.name.clone(), topic.clone());
            Ok(())
        })
    }

    async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        Ok(self.with_tenant(tenant, |t| t.topics.get(name).cloned()))
    }

    async fn update_topic(&self, tenant: TenantId, name: &str, update: &TopicUpdate) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let topic = t.topics.get_mut(name).ok_or(StoreError::NotFound)?;
            topic.updated = update.updated;
            if let Some(public) = &update.public {
                topic.public = (!public.is_null()).then(|| public.clone());
            }
            if let Some(trusted) = &update.trusted {
                topic.trusted = (!trusted.is_null()).then(|| trusted.clone());
            }
            if let Some(tags) = &update.tags {
                topic.tags = tags.clone();
            }
            if let Some(defacs) = update.defacs {
                topic.defacs = defacs;
            }
            if let Some(owner) = update.owner {
                topic.owner = Some(owner);
            }
            Ok(())
        })
    }

    async fn delete_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            t.topics.remove(name).ok_or(StoreError::NotFound)?;
            t.subs.retain(|(topic, _), _| topic != name);
            t.history.remove(name);
            Ok(())
        })
    }

    async fn find_topics_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<Topic>> {
        Ok(self.with_tenant(tenant, |t| {
            t.topics
                .values()
                .filter(|topic| {
                    topic.kind == TopicKind::Group
                        && topic.state == RecordState::Active
                        && topic.tags.iter().any(|tag| tags.contains(tag))
                })
                .take(limit)
                .cloned()
                .collect()
        }))
    }
}
