//! The realtime bus between nodes: envelopes addressed to a user, a topic or a session. At-most-once; storage
//! is the truth and clients recover missed events by seq.

use crate::{TenantId, UnixMillis, UserId};
use std::sync::Arc;

/// Whom an envelope is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusTarget {
    /// Every session of a user.
    User(UserId),
    /// Every session attached to a topic.
    Topic(String),
    /// One session on one node.
    Session { node_id: String, session: String },
}

/// One realtime event as it travels between nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub event_id: String,
    pub tenant: TenantId,
    pub kind: String,
    pub target: BusTarget,
    pub from: Option<UserId>,
    pub source_node: String,
    /// A session that must not receive the event (the sender's, for `noecho`).
    pub skip_session: Option<String>,
    pub dedup_key: Option<String>,
    pub occurred_at: UnixMillis,
    /// The serialised server message to deliver.
    pub payload: String,
}

/// A bus that could not take an envelope.
#[derive(Debug, Clone, thiserror::Error)]
#[error("realtime bus unavailable: {0}")]
pub struct BusError(pub String);

/// Receives envelopes from the bus on this node. Must not block.
pub trait BusSink: Send + Sync {
    /// Delivers one envelope to local sessions.
    fn deliver(&self, envelope: Envelope);
}

/// Publishes envelopes to other nodes and hands their envelopes to this node's sink.
#[async_trait::async_trait]
pub trait RealtimeBus: Send + Sync {
    /// Sends an envelope to the nodes that may hold its targets.
    async fn publish(&self, envelope: Envelope) -> Result<(), BusError>;

    /// Registers this node's sink. Called once at start.
    fn subscribe(&self, sink: Arc<dyn BusSink>);
}
