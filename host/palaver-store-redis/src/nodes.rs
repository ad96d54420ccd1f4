//! The node registry over Redis: each node id is claimed by one hash `{prefix}:0:node:{node_id}` (`instance`,
//! `listen`, `started_at`) that lives `node_ttl_seconds` past the last heartbeat, plus the set
//! `{prefix}:0:nodes` of claimed ids so that listing needs no `SCAN`.
//!
//! Claims are not tenant data, so their keys sit under the system tenant 0. Claiming and refreshing are one
//! script: it takes a free or expired id, renews our own claim, and otherwise answers who holds it, so two
//! processes can never both believe they hold an id. The set is pruned of expired ids when it is read.

use crate::client::RedisClient;
use async_trait::async_trait;
use palaver_core::ports::{NodeError, NodeInfo, NodeRegistry};
use redis::Script;
use std::sync::Arc;

/// KEYS: claim, nodes. ARGV: instance, listen, started_at, ttl ms, node id.
/// Answers `{1, '', '', 0}` when the claim is ours now, else `{0, holder, listen, pttl}`.
const CLAIM: &str = r"
local holder = redis.call('HGET', KEYS[1], 'instance')
if holder and holder ~= ARGV[1] then
  return {0, holder, redis.call('HGET', KEYS[1], 'listen') or '', redis.call('PTTL', KEYS[1])}
end
redis.call('HSET', KEYS[1], 'instance', ARGV[1], 'listen', ARGV[2], 'started_at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return {1, '', '', 0}
";

/// KEYS: claim, nodes. ARGV: instance, node id. Releases the claim only if this instance holds it.
const RELEASE: &str = r"
if redis.call('HGET', KEYS[1], 'instance') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 1
";

/// KEYS: nodes. ARGV: claim head. Answers the ids whose claim is live and forgets the others.
const LIVE: &str = r"
local live = {}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. node) == 1 then
    table.insert(live, node)
  else
    redis.call('SREM', KEYS[1], node)
  end
end
return live
";

/// The registry of live nodes. Cloning is cheap.
#[derive(Clone)]
pub struct RedisNodes {
    client: RedisClient,
    scripts: Arc<(Script, Script, Script)>,
}

impl std::fmt::Debug for RedisNodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNodes").finish_non_exhaustive()
    }
}

impl RedisNodes {
    /// The registry on `client`, with claims living `node_ttl_seconds`.
    pub fn new(client: RedisClient) -> Self {
        Self { client, scripts: Arc::new((Script::new(CLAIM), Script::new(RELEASE), Script::new(LIVE))) }
    }

    /// Takes or renews the claim; `register` and `heartbeat` differ only in how the server reacts to `Taken`.
    async fn claim(&self, node: &NodeInfo) -> Result<(), NodeError> {
        let keys = self.client.keys();
        let ttl_ms = self.client.config().node_ttl_seconds.saturating_mul(1000);
        let mut call = self.scripts.0.key(keys.node_claim(&node.node_id));
        call.key(keys.nodes())
            .arg(&node.instance)
            .arg(&node.listen)
            .arg(node.started_at)
            .arg(ttl_ms)
            .arg(&node.node_id);
        let (ours, holder, listen, expires_in_ms): (i64, String, String, i64) = self.client.script(&call).await?;
        if ours == 1 {
            Ok(())
        } else {
            Err(NodeError::Taken { node_id: node.node_id.clone(), holder, listen, expires_in_ms })
        }
    }
}

#[async_trait]
impl NodeRegistry for RedisNodes {
    async fn register(&self, node: &NodeInfo) -> Result<(), NodeError> {
        self.claim(node).await
    }

    async fn heartbeat(&self, node: &NodeInfo) -> Result<(), NodeError> {
        self.claim(node).await
    }

    async fn deregister(&self, node: &NodeInfo) -> Result<(), NodeError> {
        let keys = self.client.keys();
        let mut call = self.scripts.1.key(keys.node_claim(&node.node_id));
        call.key(keys.nodes()).arg(&node.instance).arg(&node.node_id);
        let released: i64 = self.client.script(&call).await?;
        if released == 0 {
            tracing::info!(node_id = %node.node_id, "node claim not released: another instance holds it or it expired");
        }
        Ok(())
    }

    async fn live_nodes(&self) -> Result<Vec<String>, NodeError> {
        let keys = self.client.keys();
        let mut call = self.scripts.2.key(keys.nodes());
        call.arg(keys.node_claim_head());
        let mut live: Vec<String> = self.client.script(&call).await?;
        live.sort();
        Ok(live)
    }
}
