//! What a node does as one of many: it claims its id in the shared registry (a second live node with the same
//! id refuses to start), and a heartbeat task renews the claim, refreshes the shared presence of the node's
//! sessions and checks them against session-control versions.

use crate::config::Config;
use anyhow::Context;
use palaver_core::ports::{NodeError, NodeInfo, NodeRegistry};
use palaver_service::Service;
use palaver_store_redis::RedisBus;
use std::sync::Arc;
use std::time::Duration;

/// The shared parts a node of a cluster needs beyond its ports.
pub(crate) struct Cluster {
    pub(crate) nodes: Arc<dyn NodeRegistry>,
    pub(crate) bus: RedisBus,
    /// The Redis adapters' counters, for `/metrics`.
    pub(crate) metrics: Arc<dyn palaver_core::MetricsSource>,
    /// Redis itself, for `/readyz`.
    pub(crate) redis: palaver_store_redis::RedisClient,
}

/// Claims the configured node id, or fails with who holds it.
pub(crate) async fn claim_node_id(cfg: &Config, nodes: &dyn NodeRegistry) -> anyhow::Result<NodeInfo> {
    let info = NodeInfo {
        node_id: cfg.server.node_id.clone(),
        instance: format!("{:016x}", rand::random::<u64>()),
        listen: cfg.server.listen.clone(),
        started_at: palaver_core::now_millis(),
    };
    match nodes.register(&info).await {
        Ok(()) => Ok(info),
        Err(e @ NodeError::Taken { .. }) => Err(anyhow::anyhow!(
            "refusing to start: {e}. Give this node another id (--node-id, server.node_id, IM_NODE_ID) or stop the other one."
        )),
        Err(e) => Err(e).context("registering the node id in Redis"),
    }
}

/// The running heartbeat task.
pub(crate) struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    nodes: Arc<dyn NodeRegistry>,
    info: NodeInfo,
}

impl Heartbeat {
    pub(crate) fn start(cluster: Cluster, info: NodeInfo, service: Service, cfg: &Config) -> Heartbeat {
        let every = Duration::from_millis(cfg.server.heartbeat_ms);
        let nodes = cluster.nodes.clone();
        let claim = info.clone();
        let bus = cluster.bus;
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                match nodes.heartbeat(&claim).await {
                    Ok(()) => {}
                    Err(e @ NodeError::Taken { .. }) => {
                        // Our claim expired (Redis was unreachable for longer than its TTL) and another process
                        // took the id: two nodes now share it, which the operator must resolve.
                        service.metrics().heartbeat_failed("node");
                        tracing::error!(error = %e, "this node's id was taken over by another process");
                    }
                    Err(e) => {
                        service.metrics().heartbeat_failed("node");
                        tracing::warn!(error = %e, "node heartbeat failed");
                    }
                }
                if !bus.subscriber_connected() {
                    tracing::warn!("the realtime bus subscriber is not connected; remote events are not arriving");
                }
                service.heartbeat().await;
            }
        });
        Heartbeat { task, nodes: cluster.nodes, info }
    }

    /// Stops the task and releases the node id.
    pub(crate) async fn stop(self) {
        self.task.abort();
        if let Err(e) = self.nodes.deregister(&self.info).await {
            tracing::warn!(error = %e, "node id not released; it expires with its TTL");
        }
    }
}
