//! Node identity across the cluster: each node claims its id while it runs and refreshes the claim with a
//! heartbeat, so that two live nodes never share an id (the bus would take one for the other's loopback).

use crate::{StoreError, UnixMillis};

/// What a node says about itself when it claims its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub node_id: String,
    /// Random per process: tells a restarted node from the one that held the id before.
    pub instance: String,
    pub listen: String,
    pub started_at: UnixMillis,
}

/// Why a claim failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Another live process holds the id.
    #[error(
        "node id {node_id:?} is held by another live node (instance {holder}, listening on {listen}); it expires {expires_in_ms} ms after that node's last heartbeat"
    )]
    Taken { node_id: String, holder: String, listen: String, expires_in_ms: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The registry of live nodes.
#[async_trait::async_trait]
pub trait NodeRegistry: Send + Sync {
    /// Claims `node.node_id` for this process, or says who holds it.
    async fn register(&self, node: &NodeInfo) -> Result<(), NodeError>;

    /// Refreshes the claim. `Taken` means another process took the id over (ours had expired).
    async fn heartbeat(&self, node: &NodeInfo) -> Result<(), NodeError>;

    /// Releases the claim at shutdown, if this process still holds it.
    async fn deregister(&self, node: &NodeInfo) -> Result<(), NodeError>;

    /// The ids of the nodes whose claim is live.
    async fn live_nodes(&self) -> Result<Vec<String>, NodeError>;
}
