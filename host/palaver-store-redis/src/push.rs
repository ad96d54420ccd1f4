//! Push dedup in Redis: `{prefix}:{tenant}:push:dedup:{topic}:{seq}:{uid}` taken with `SET NX PX ttl`, so of all
//! the nodes and redeliveries that try to push one message to one user, exactly one within the TTL does.

use crate::client::RedisClient;
use async_trait::async_trait;
use palaver_core::ports::PushDedup;
use palaver_core::{Seq, StoreResult, TenantId, UserId};

/// Push dedup keys in Redis. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct RedisPushDedup {
    client: RedisClient,
}

impl RedisPushDedup {
    pub fn new(client: RedisClient) -> Self {
        Self { client }
    }
}

#[async_trait]
impl PushDedup for RedisPushDedup {
    async fn claim(&self, tenant: TenantId, topic: &str, seq: Seq, user: UserId, ttl_ms: u64) -> StoreResult<bool> {
        let key = self.client.keys().push_dedup(tenant, topic, seq, user);
        let set = redis::cmd("SET").arg(&key).arg("1").arg("NX").arg("PX").arg(ttl_ms.max(1)).clone();
        let taken: Option<String> = self.client.query(&set).await?;
        Ok(taken.is_some())
    }
}
