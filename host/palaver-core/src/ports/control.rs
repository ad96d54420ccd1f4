//! Session-control versions: a counter per user and per device that an eviction bumps. A
//! session remembers the versions it logged in under; seeing a higher one (from the bus, or when it checks on
//! a heartbeat because a bus message was lost) closes it, and a control older than the session never does.

use crate::{StoreResult, TenantId, UserId};

/// Which counter a control bumps.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlScope {
    /// Every session of the user.
    User,
    /// The sessions of one device id (or a platform slot, `platform:<name>`).
    Device(String),
}

/// The versions a session is judged by: the user's, and one per device slot the session asked about, in the
/// order asked. Zero means never bumped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlVersions {
    pub user: u64,
    pub devices: Vec<u64>,
}

/// The control counters.
#[async_trait::async_trait]
pub trait SessionControlStore: Send + Sync {
    /// Bumps a counter and returns its new value.
    async fn bump(&self, tenant: TenantId, user: UserId, scope: &ControlScope) -> StoreResult<u64>;

    /// Reads the user's counter and those of `devices`.
    async fn versions(&self, tenant: TenantId, user: UserId, devices: &[String]) -> StoreResult<ControlVersions>;
}
