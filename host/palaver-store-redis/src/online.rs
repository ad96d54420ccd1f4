//! Group online members: `topic:{topic}:online_members`, the per-node `topic:{topic}:node:{node_id}:
//! online_members`, and `topic:{topic}:online_nodes`, the nodes a cross-node fanout must reach.
//!
//! The one-topic methods are inherent to [`RedisPresence`]; the port's batch methods (`join_topics`,
//! `leave_topics`, `heartbeat`) are built here as pipelines. The caller (the node's hub) joins a user when the
//! user's first local session attaches to the topic and leaves when the last one detaches; the sets hold
//! users, not sessions. The bus routes topic envelopes by these sets (see [`crate::RedisBus`]).
//!
//! A heartbeat refreshes the sets' TTLs and re-lists the node in `online_nodes`, but it cannot rebuild the
//! content of a member set Redis lost (a flush, a failover): the service re-joins its users when their
//! sessions subscribe again, and until then the bus broadcasts the topic or skips this node.

use crate::presence::RedisPresence;
use palaver_core::ports::SessionBeat;
use palaver_core::{StoreResult, TenantId, UserId};

/// The most commands in one heartbeat or leave pipeline, so one call never holds Redis for long.
const CHUNK: usize = 500;

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

/// KEYS: attached nodes. ARGV: node-set head, node-claim head. The users of every listed node's attached set,
/// dropping nodes whose set expired (a node that stopped refreshing) and skipping nodes whose id claim is gone
/// (a node that died: its claim expires long before its sets); a user attached on two nodes comes twice.
pub(crate) const ATTACHED: &str = r"
local users = {}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. node .. ':attached'
  if redis.call('EXISTS', ARGV[2] .. node) == 0 then
    -- a dead node's users saw nothing live; its set expires on its own
  elseif redis.call('EXISTS', key) == 1 then
    for _, user in ipairs(redis.call('SMEMBERS', key)) do table.insert(users, user) end
  else
    redis.call('SREM', KEYS[1], node)
  end
end
return users
";

/// KEYS: online members, this node's members, online nodes, this node's attached users, attached nodes. ARGV:
/// node id, ttl. Refreshes this node's attached set (and lists the node for it) while it exists; then
/// refreshes the three member sets and
/// lists this node again in the nodes set (healing one that was lost), but only while this node's member set
/// exists: re-listing a node whose members are gone would make the bus route the topic to nobody instead of
/// broadcasting. Answers 0 for such a topic, whose members the service restores when they attach again.
pub(crate) const TOPIC_BEAT: &str = r"
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('SADD', KEYS[5], ARGV[1])
  redis.call('EXPIRE', KEYS[4], ARGV[2])
  redis.call('EXPIRE', KEYS[5], ARGV[2])
end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('SADD', KEYS[3], ARGV[1])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
return 1
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

    /// Replaces `node_id`'s attached users of `topic` in one transaction, listing the node for readers (or
    /// unlisting it when `users` is empty).
    pub(crate) async fn put_attached(
        &self,
        tenant: TenantId,
        topic: &str,
        node_id: &str,
        users: &[UserId],
    ) -> StoreResult<()> {
        let keys = self.client.keys();
        let ttl = self.client.config().presence_ttl_seconds;
        let (mine, nodes) =
            (keys.topic_node_attached(tenant, topic, node_id), keys.topic_attached_nodes(tenant, topic));
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("DEL").arg(&mine).ignore();
        if users.is_empty() {
            pipe.cmd("SREM").arg(&nodes).arg(node_id).ignore();
        } else {
            let mut add = redis::cmd("SADD");
            add.arg(&mine);
            for u in users {
                add.arg(u.0);
            }
            pipe.add_command(add).ignore();
            pipe.cmd("SADD").arg(&nodes).arg(node_id).ignore();
            pipe.cmd("EXPIRE").arg(&mine).arg(ttl).ignore();
            pipe.cmd("EXPIRE").arg(&nodes).arg(ttl).ignore();
        }
        self.client.pipeline(&pipe).await
    }

    /// The users attached to `topic` on any live node ([`ATTACHED`]), each once.
    pub(crate) async fn all_attached(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<UserId>> {
        let keys = self.client.keys();
        let mut call = self.scripts.attached.key(keys.topic_attached_nodes(tenant, topic));
        call.arg(self.node_set_head(tenant, topic)).arg(keys.node_claim_head());
        let mut users: Vec<u64> = self.client.script(&call).await?;
        users.sort_unstable();
        users.dedup();
        Ok(users.into_iter().map(UserId).collect())
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

    /// Joins `user` to every topic of `topics` on this node in one transaction.
    pub(crate) async fn join_many(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()> {
        if topics.is_empty() {
            return Ok(());
        }
        let keys = self.client.keys();
        let ttl = self.client.config().presence_ttl_seconds;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for topic in topics {
            let all = keys.topic_online_members(tenant, topic);
            let mine = keys.topic_node_online_members(tenant, topic, &self.node_id);
            let nodes = keys.topic_online_nodes(tenant, topic);
            pipe.cmd("SADD").arg(&all).arg(user.0).ignore();
            pipe.cmd("SADD").arg(&mine).arg(user.0).ignore();
            pipe.cmd("SADD").arg(&nodes).arg(&*self.node_id).ignore();
            for key in [&all, &mine, &nodes] {
                pipe.cmd("EXPIRE").arg(key).arg(ttl).ignore();
            }
        }
        self.client.pipeline(&pipe).await
    }

    /// Leaves every topic of `topics` on this node, one `LEAVE` per topic in as few pipelines as [`CHUNK`]
    /// allows. Each `LEAVE` is atomic by itself; repeating one is harmless.
    pub(crate) async fn leave_many(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()> {
        let keys = self.client.keys();
        for chunk in topics.chunks(CHUNK) {
            let mut pipe = redis::pipe();
            for topic in chunk {
                pipe.cmd("EVALSHA")
                    .arg(self.scripts.leave.get_hash())
                    .arg(3)
                    .arg(keys.topic_online_members(tenant, topic))
                    .arg(keys.topic_node_online_members(tenant, topic, &self.node_id))
                    .arg(keys.topic_online_nodes(tenant, topic))
                    .arg(user.0)
                    .arg(&*self.node_id)
                    .arg(self.node_set_head(tenant, topic))
                    .ignore();
            }
            self.client.script_pipeline::<()>(&[&self.scripts.leave], &pipe).await?;
        }
        Ok(())
    }

    /// The node heartbeat: `REFRESH` for every session and [`TOPIC_BEAT`] for every topic, in pipelines of at
    /// most [`CHUNK`] calls. Sessions are refreshed with `now = -1`, which `REFRESH` never takes for a newer
    /// activity, so `last_active_at` (and the `node_id` written with it) stays as the last real activity set.
    pub(crate) async fn beat(&self, sessions: &[SessionBeat], topics: &[(TenantId, String)]) -> StoreResult<()> {
        let keys = self.client.keys();
        let ttl = self.ttl();
        let scripts = [&self.scripts.refresh, &self.scripts.topic_beat];
        for chunk in sessions.chunks(CHUNK) {
            let mut pipe = redis::pipe();
            for s in chunk {
                pipe.cmd("EVALSHA")
                    .arg(self.scripts.refresh.get_hash())
                    .arg(2)
                    .arg(keys.presence_user(s.tenant, s.user))
                    .arg(keys.presence_user_sessions(s.tenant, s.user))
                    .arg(self.member(&s.session))
                    .arg(&*self.node_id)
                    .arg(-1)
                    .arg(ttl)
                    .ignore();
            }
            self.client.script_pipeline::<()>(&scripts, &pipe).await?;
        }
        for chunk in topics.chunks(CHUNK) {
            let mut pipe = redis::pipe();
            for (tenant, topic) in chunk {
                pipe.cmd("EVALSHA")
                    .arg(self.scripts.topic_beat.get_hash())
                    .arg(5)
                    .arg(keys.topic_online_members(*tenant, topic))
                    .arg(keys.topic_node_online_members(*tenant, topic, &self.node_id))
                    .arg(keys.topic_online_nodes(*tenant, topic))
                    .arg(keys.topic_node_attached(*tenant, topic, &self.node_id))
                    .arg(keys.topic_attached_nodes(*tenant, topic))
                    .arg(&*self.node_id)
                    .arg(ttl);
            }
            let kept: Vec<i64> = self.client.script_pipeline(&scripts, &pipe).await?;
            let lost = kept.iter().filter(|k| **k == 0).count();
            if lost > 0 {
                tracing::debug!(lost, "heartbeat found topics whose member set on this node is gone");
            }
        }
        Ok(())
    }
}
