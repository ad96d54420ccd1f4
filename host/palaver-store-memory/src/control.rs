//! Session-control counters and node claims in process: what the embedded node, and tests of several nodes in
//! one process, use in place of Redis.

use async_trait::async_trait;
use palaver_core::ports::{ControlScope, ControlVersions, NodeError, NodeInfo, NodeRegistry, SessionControlStore};
use palaver_core::{StoreResult, TenantId, UserId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// One counter's key: whose, and which scope.
type CounterKey = (TenantId, UserId, ControlScope);

/// Control versions per (tenant, user, scope). Cloning is cheap and clones share the counters.
#[derive(Clone, Default, Debug)]
pub struct MemoryControl {
    versions: Arc<Mutex<HashMap<CounterKey, u64>>>,
}

#[async_trait]
impl SessionControlStore for MemoryControl {
    async fn bump(&self, tenant: TenantId, user: UserId, scope: &ControlScope) -> StoreResult<u64> {
        let mut map = self.versions.lock();
        let v = map.entry((tenant, user, scope.clone())).or_default();
        *v += 1;
        Ok(*v)
    }

    async fn versions(&self, tenant: TenantId, user: UserId, devices: &[String]) -> StoreResult<ControlVersions> {
        let map = self.versions.lock();
        let get = |scope: ControlScope| map.get(&(tenant, user, scope)).copied().unwrap_or(0);
        Ok(ControlVersions {
            user: get(ControlScope::User),
            devices: devices.iter().map(|d| get(ControlScope::Device(d.clone()))).collect(),
        })
    }
}

/// Node claims in process: a second claim of a held id fails, as it would across machines with Redis.
#[derive(Clone, Default, Debug)]
pub struct MemoryNodes {
    claims: Arc<Mutex<HashMap<String, NodeInfo>>>,
}

impl MemoryNodes {
    fn taken(holder: &NodeInfo) -> NodeError {
        NodeError::Taken {
            node_id: holder.node_id.clone(),
            holder: holder.instance.clone(),
            listen: holder.listen.clone(),
            expires_in_ms: i64::MAX,
        }
    }
}

#[async_trait]
impl NodeRegistry for MemoryNodes {
    async fn register(&self, node: &NodeInfo) -> Result<(), NodeError> {
        let mut claims = self.claims.lock();
        match claims.get(&node.node_id) {
            Some(holder) if holder.instance != node.instance => Err(Self::taken(holder)),
            _ => {
                claims.insert(node.node_id.clone(), node.clone());
                Ok(())
            }
        }
    }

    async fn heartbeat(&self, node: &NodeInfo) -> Result<(), NodeError> {
        self.register(node).await
    }

    async fn deregister(&self, node: &NodeInfo) -> Result<(), NodeError> {
        let mut claims = self.claims.lock();
        if claims.get(&node.node_id).is_some_and(|h| h.instance == node.instance) {
            claims.remove(&node.node_id);
        }
        Ok(())
    }

    async fn live_nodes(&self) -> Result<Vec<String>, NodeError> {
        let mut ids: Vec<String> = self.claims.lock().keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, instance: &str) -> NodeInfo {
        NodeInfo { node_id: id.into(), instance: instance.into(), listen: "x".into(), started_at: 0 }
    }

    #[tokio::test]
    async fn versions_count_per_scope_and_tenant() {
        let c = MemoryControl::default();
        let (t1, t2, u) = (TenantId(1), TenantId(2), UserId(7));
        assert_eq!(c.bump(t1, u, &ControlScope::User).await.unwrap(), 1);
        assert_eq!(c.bump(t1, u, &ControlScope::Device("d".into())).await.unwrap(), 1);
        assert_eq!(c.bump(t1, u, &ControlScope::Device("d".into())).await.unwrap(), 2);
        let v = c.versions(t1, u, &["d".into(), "e".into()]).await.unwrap();
        assert_eq!(v, ControlVersions { user: 1, devices: vec![2, 0] });
        assert_eq!(c.versions(t2, u, &[]).await.unwrap(), ControlVersions::default());
    }

    #[tokio::test]
    async fn a_held_id_is_refused_until_released() {
        let n = MemoryNodes::default();
        n.register(&node("a", "1")).await.unwrap();
        n.register(&node("a", "1")).await.unwrap();
        assert!(matches!(n.register(&node("a", "2")).await, Err(NodeError::Taken { .. })));
        n.deregister(&node("a", "2")).await.unwrap();
        assert!(n.register(&node("a", "2")).await.is_err(), "only the holder releases");
        n.deregister(&node("a", "1")).await.unwrap();
        n.register(&node("a", "2")).await.unwrap();
        assert_eq!(n.live_nodes().await.unwrap(), ["a"]);
    }
}
