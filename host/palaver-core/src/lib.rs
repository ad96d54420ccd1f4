//! Palaver's domain: tenants, users, topics, subscriptions, messages, access modes, and the ports through which
//! the service reaches storage, seq allocation, idempotency, presence and the realtime bus.
//!
//! **Invariant:** this crate does no I/O (reading the wall clock in [`now_millis`] aside) and depends on no async
//! runtime. Adapters implement its ports; the
//! service calls them; only the server binary picks which adapter backs which port.

mod access;
mod error;
mod ids;
mod login;
mod metrics;
mod model;
pub mod ports;
mod ranges;
mod recent;

pub use access::{AccessMode, DefaultAccess, ModeParseError};
pub use error::{StoreError, StoreResult};
pub use ids::{
    IdParseError, MAX_GROUP_NAME_BODY, SessionId, TenantId, TopicKind, UserId, is_name_body, p2p_name, p2p_peer,
    p2p_users, topic_kind,
};
pub use login::normalize_login;
pub use metrics::{LATENCY_BUCKETS, MetricsSource, Registry, latency_histogram, render as render_metrics};
pub use model::*;
pub use recent::RecentIds;

/// A per-topic message sequence number. Starts at 1; 0 means "none yet".
pub type Seq = i64;

/// Milliseconds since the Unix epoch, UTC. The wire layer renders it as RFC 3339.
pub type UnixMillis = i64;

/// The wall clock in Unix milliseconds: the one every crate stamps with. A clock before 1970 reads as the epoch
/// rather than failing a write; one past the year 292 million saturates.
pub fn now_millis() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| UnixMillis::try_from(d.as_millis()).unwrap_or(UnixMillis::MAX))
}
