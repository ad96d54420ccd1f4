//! Listeners: plugins that learn of stored messages (`after-publish`) and account changes (`on-account`) off the
//! request path. The service leaves a [`PluginEvent`] on the task queue (`im.plugin.event`); a worker on some node
//! consumes it and hands it to every listening plugin, at least once.

use crate::{Seq, TenantId, UserId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What happened to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountChange {
    Created,
    /// Its public profile or tags changed.
    Updated,
    /// An operator suspended it: it cannot log in, its sessions were closed.
    Suspended,
    /// An operator made a suspended account active again.
    Reactivated,
    Deleted,
}

/// One event for the listeners, as it travels on the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum PluginEvent {
    /// A message was stored (and is not held).
    Published {
        tenant: TenantId,
        /// The stored topic name (`grp…`, `p2p…`; its kind is `crate::topic_kind` of it).
        topic: String,
        seq: Seq,
        /// Unix ms it was stored.
        ts: i64,
        from: UserId,
        content: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        head: Option<Map<String, Value>>,
    },
    /// An account was created, changed or deleted.
    Account {
        tenant: TenantId,
        /// The event's own id (128 random bits in hex), the same on every delivery, for listeners to drop repeats.
        id: String,
        user: UserId,
        /// Who made the change: the user, or `None` when an operator (the admin API or an admin command) did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<UserId>,
        change: AccountChange,
        /// Unix ms of the change.
        ts: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public: Option<Value>,
        #[serde(default)]
        tags: Vec<String>,
    },
}

impl PluginEvent {
    pub fn tenant(&self) -> TenantId {
        match self {
            PluginEvent::Published { tenant, .. } | PluginEvent::Account { tenant, .. } => *tenant,
        }
    }

    /// Which kind of listener takes it.
    pub fn kind(&self) -> ListenerKind {
        match self {
            PluginEvent::Published { .. } => ListenerKind::Published,
            PluginEvent::Account { .. } => ListenerKind::Account,
        }
    }
}

/// The kinds of [`PluginEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListenerKind {
    Published,
    Account,
}

/// One listener's failure to take an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerFailure {
    pub plugin: String,
    pub reason: String,
    /// The plugin was not called: its circuit breaker for the tenant is open. Trying again within the backoff is
    /// pointless, so the worker dead-letters the event for it at once.
    pub skipped: bool,
}

/// The listeners.
#[async_trait::async_trait]
pub trait EventHook: Send + Sync {
    /// The plugins that take `kind` events for `tenant` now: a lookup, no call. The service leaves no event on the
    /// queue when it is empty.
    fn listeners(&self, tenant: TenantId, kind: ListenerKind) -> Vec<String>;

    /// Whether any plugin takes `kind` events for `tenant` now: the publish path's check, without allocating.
    fn listens(&self, tenant: TenantId, kind: ListenerKind) -> bool {
        !self.listeners(tenant, kind).is_empty()
    }

    /// Hands `event` to the listeners named in `only` (all of [`Self::listeners`] when `None`); `attempt` is 1 on
    /// the first delivery. Returns the listeners that failed (an `err`, a fault, a breached limit).
    async fn deliver(&self, event: &PluginEvent, only: Option<&[String]>, attempt: u32) -> Vec<ListenerFailure>;
}

#[async_trait::async_trait]
impl EventHook for crate::ports::NoHooks {
    fn listeners(&self, _: TenantId, _: ListenerKind) -> Vec<String> {
        Vec::new()
    }

    async fn deliver(&self, _: &PluginEvent, _: Option<&[String]>, _: u32) -> Vec<ListenerFailure> {
        Vec::new()
    }
}
