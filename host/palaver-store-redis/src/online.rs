//! Group online members (§5.4): `topic:{topic}:online_members`, the per-node `topic:{topic}:node:{node_id}:
//! online_members`, and `topic:{topic}:online_nodes`, the nodes a cross-node fanout must reach.
//!
//! These are inherent methods of [`RedisPresence`] rather than a port: only the multi-node fanout uses them,
//! and their shape will settle with it. The caller (the node's hub) joins a user when the user's first local
//! session attaches to the topic and leaves when the last one detaches; the sets hold users, not sessions.

use crate::presence::RedisPresence;
use palaver_core::{StoreResult, TenantId, UserId};

/// KEYS: online members, this node's members, online nodes. ARGV: uid, node id, node-set head.
/// A user leaves the topic-wide set only when no other live node still lists them.
pub(crate) const LEAVE: &str = r"
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('SCARD', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[2]) end
for _, node in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if redis.call('SISMEMBER', ARGV[3] .. node .. ':online_members', ARGV[1]) == 1 then return 1 end
end
redis.call('SREM', KEYS[1], ARGV[1])
return 0
";

/// KEYS: online nodes. ARGV: node-set head. Drops nodes whose set expired (a node that stopped refreshing)
/// and answers the live ones.
pub(crate) const LIVE_NODES: &str = r"
local live = {}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. node .. ':online_members') == 1 then
    table.insert(live, node)
  else
    redis.call('SREM', KEYS[1], node)
  end
end
return live
";

impl RedisPresence {
    fn node_set_head(&self, tenant: TenantId, topic: &str) -> String {
        self.client.keys().topic_node_head(tenant, topic)
    }

    /// Lists `user` as online in `topic` on this node, refreshing the sets' TTL.
    pub async fn join_topic(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        let keys = self.client.keys();
        let ttl = self.client.config().presence_ttl_seconds;
        let all = keys.topic_online_members(tenant, topic);
        let mine = keys.topic_node_online_members(tenant, topic, &self.node_id);
        let nodes = keys.topic_online_nodes(tenant, topic);
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SADD").arg(&all).arg(user.0).ignore();
        pipe.cmd("SADD").arg(&mine).arg(user.0).ignore();
        pipe.cmd("SADD").arg(&nodes).arg(&*self.node_id).ignore();
        for key in [&all, &mine, &nodes] {
            pipe.cmd("EXPIRE").arg(key).arg(ttl).ignore();
        }
        self.client.pipeline(&pipe).await
    }

    /// Removes `user` from this node's members of `topic`, and from the topic-wide set unless another node
    /// still lists them.
    pub async fn leave_topic(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        let keys = self.client.keys();
        let mut call = self.scripts.leave.key(keys.topic_online_members(tenant, topic));
        call.key(keys.topic_node_online_members(tenant, topic, &self.node_id))
            .key(keys.topic_online_nodes(tenant, topic))
            .arg(user.0)
            .arg(&*self.node_id)
            .arg(self.node_set_head(tenant, topic));
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    /// Refreshes the TTL of this node's online sets of `topic`, on a heartbeat of any attached member.
    pub async fn refresh_topic(&self, tenant: TenantId, topic: &str) -> StoreResult<()> {
        let keys = self.client.keys();
        let ttl = self.client.config().presence_ttl_seconds;
        let mut pipe = redis::pipe();
        for key in [
            keys.topic_online_members(tenant, topic),
            keys.topic_node_online_members(tenant, topic, &self.node_id),
            keys.topic_online_nodes(tenant, topic),
        ] {
            pipe.cmd("EXPIRE").arg(key).arg(ttl).ignore();
        }
        self.client.pipeline(&pipe).await
    }

    /// The nodes that hold online members of `topic`, the targets of a cross-node fanout.
    pub async fn topic_nodes(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<String>> {
        let keys = self.client.keys();
        let mut call = self.scripts.live_nodes.key(keys.topic_online_nodes(tenant, topic));
        call.arg(self.node_set_head(tenant, topic));
        self.client.script(&call).await
    }

    /// The users online in `topic` on `node_id`.
    pub async fn topic_node_members(&self, tenant: TenantId, topic: &str, node_id: &str) -> StoreResult<Vec<UserId>> {
        let key = self.client.keys().topic_node_online_members(tenant, topic, node_id);
        let members: Vec<u64> = self.client.query(redis::cmd("SMEMBERS").arg(&key)).await?;
        Ok(members.into_iter().map(UserId).collect())
    }

    /// The users online in `topic` on any node, from the topic-wide set.
    pub async fn topic_members(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<UserId>> {
        let key = self.client.keys().topic_online_members(tenant, topic);
        let members: Vec<u64> = self.client.query(redis::cmd("SMEMBERS").arg(&key)).await?;
        Ok(members.into_iter().map(UserId).collect())
    }
}
