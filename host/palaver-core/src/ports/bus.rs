//! The realtime bus between nodes: envelopes addressed to a user, a device, a topic or one
//! session. At-most-once: storage is the truth and clients recover missed events by seq.

use crate::{TenantId, UnixMillis, UserId};
use std::sync::Arc;

/// Whom an envelope is for. Adapters route on it; the receiving node selects its local sessions by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusTarget {
    /// Every session of a user.
    User(UserId),
    /// Every session of several users (one `{pres}` to all of a user's contacts): one envelope, not one each.
    Users(Vec<UserId>),
    /// The sessions of one user that came from one device (or platform slot, `platform:<name>`).
    Device { user: UserId, device: String },
    /// The sessions attached to (or online members of) a stored topic.
    Topic(String),
    /// One session on one node.
    Session { node_id: String, session: String },
}

impl BusTarget {
    /// The envelope's `target_type`.
    pub fn kind(&self) -> &'static str {
        match self {
            BusTarget::User(_) | BusTarget::Users(_) => "user",
            BusTarget::Device { .. } => "device",
            BusTarget::Topic(_) => "topic",
            BusTarget::Session { .. } => "session",
        }
    }
}

/// What an envelope carries, which decides the channel it travels on and how the consumer reads the payload
/// (the envelope's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A stored message (`{data}`), or a change to one (recall, edit, delete).
    Message,
    /// A change to a topic that its attached sessions must see (`{info}`, access, membership).
    TopicEvent,
    /// A change that concerns a user's own devices (`{pres}` on `me`, business events, notifications).
    UserEvent,
    /// Online/offline changes.
    Presence,
    /// Closing sessions: evictions, revoked credentials.
    SessionControl,
}

impl EventKind {
    /// The envelope's spelling, also the channel suffix `im:{tenant}:rt:{kind}`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Message => "message",
            EventKind::TopicEvent => "topic_event",
            EventKind::UserEvent => "user_event",
            EventKind::Presence => "presence",
            EventKind::SessionControl => "session_control",
        }
    }

    /// Parses [`EventKind::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "message" => EventKind::Message,
            "topic_event" => EventKind::TopicEvent,
            "user_event" => EventKind::UserEvent,
            "presence" => EventKind::Presence,
            "session_control" => EventKind::SessionControl,
            _ => return None,
        })
    }
}

/// One realtime event as it travels between nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Unique per event; consumers drop repeats.
    pub event_id: String,
    pub tenant: TenantId,
    /// The tenant's code, where the publisher knows it (diagnostics only: routing uses `tenant`).
    pub tenant_code: Option<String>,
    pub kind: EventKind,
    pub target: BusTarget,
    pub from: Option<UserId>,
    pub source_node: String,
    /// A session on the source node that must not receive the event (the sender's, for `noecho`).
    pub skip_session: Option<String>,
    /// A short-lived idempotency key such as `message:grp…:123`.
    pub dedup_key: Option<String>,
    pub occurred_at: UnixMillis,
    /// The event itself, as a JSON document the service defines.
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
pub trait RealtimeBus: Send + Sync {
    /// Queues an envelope for the nodes that may hold its targets, without waiting. Envelopes published from
    /// one node reach each other node in publish order. An error means the envelope was dropped (queue full
    /// or bus closed); the client recovers by seq.
    fn publish(&self, envelope: Envelope) -> Result<(), BusError>;

    /// Registers this node's sink. Called once at start.
    fn subscribe(&self, sink: Arc<dyn BusSink>);

    /// True when other nodes may exist, so that publishing is worth its cost. The embedded bus says false and
    /// the service then skips encoding envelopes at all.
    fn is_shared(&self) -> bool;
}
