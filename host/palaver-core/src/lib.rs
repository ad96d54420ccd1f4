//! Palaver's domain: tenants, users, topics, subscriptions, messages, access modes, and the ports through which
//! the service reaches storage, seq allocation, idempotency, presence and the realtime bus.
//!
//! **Invariant:** this crate does no I/O and depends on no async runtime. Adapters implement its ports; the
//! service calls them; only the server binary picks which adapter backs which port.

mod access;
pub mod columns;
mod error;
mod ids;
mod model;
pub mod ports;

pub use access::{AccessMode, DefaultAccess, ModeParseError};
pub use error::{StoreError, StoreResult};
pub use ids::{IdParseError, SessionId, TenantId, TopicKind, UserId, p2p_name, p2p_peer, p2p_users, topic_kind};
pub use model::*;

/// A per-topic message sequence number. Starts at 1; 0 means "none yet".
pub type Seq = i64;

/// Milliseconds since the Unix epoch, UTC. The wire layer renders it as RFC 3339.
pub type UnixMillis = i64;
