//! The effects port: where the realtime events and system notifications of a successful call go. The server
//! implements [`Effects`] over its bus and notification table; [`NullEffects`] drops them and
//! [`RecordingEffects`] keeps them for tests.

use palaver_core::{TenantId, UserId};
use parking_lot::Mutex;
use serde_json::Value;

/// Who receives an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventTarget {
    /// Every session of the user, on every node.
    User(UserId),
    /// The online members of the stored topic.
    Topic(String),
}

/// A realtime event a plugin emitted.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginEvent {
    /// The plugin that emitted it.
    pub plugin: String,
    pub target: EventTarget,
    /// A stable name such as `friend.request.created`.
    pub name: String,
    pub payload: Value,
}

/// A system notification a plugin wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginNotification {
    /// The plugin that wrote it.
    pub plugin: String,
    pub user: UserId,
    /// A stable kind such as `friend.request`.
    pub kind: String,
    pub title: String,
    pub payload: Value,
}

/// Why an effect could not be delivered. The call's verdict stands; the failure is logged and counted.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EffectError {
    #[error("unavailable: {0}")]
    Unavailable(String),
}

/// Receives the effects of calls that succeeded, after their key-value writes committed.
#[async_trait::async_trait]
pub trait Effects: Send + Sync {
    /// Delivers a realtime event.
    async fn emit(&self, tenant: TenantId, event: PluginEvent) -> Result<(), EffectError>;

    /// Stores a system notification (and tells the user's sessions).
    async fn notify(&self, tenant: TenantId, notification: PluginNotification) -> Result<(), EffectError>;
}

/// Drops every effect.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullEffects;

#[async_trait::async_trait]
impl Effects for NullEffects {
    async fn emit(&self, tenant: TenantId, event: PluginEvent) -> Result<(), EffectError> {
        tracing::debug!(%tenant, plugin = %event.plugin, name = %event.name, "plugin event dropped: no effects sink");
        Ok(())
    }

    async fn notify(&self, tenant: TenantId, n: PluginNotification) -> Result<(), EffectError> {
        tracing::debug!(%tenant, plugin = %n.plugin, kind = %n.kind, "plugin notification dropped: no effects sink");
        Ok(())
    }
}

/// Keeps every effect in memory, in order.
#[derive(Debug, Default)]
pub struct RecordingEffects {
    events: Mutex<Vec<(TenantId, PluginEvent)>>,
    notifications: Mutex<Vec<(TenantId, PluginNotification)>>,
}

impl RecordingEffects {
    /// An empty recorder.
    pub fn new() -> RecordingEffects {
        RecordingEffects::default()
    }

    /// The events delivered so far.
    pub fn events(&self) -> Vec<(TenantId, PluginEvent)> {
        self.events.lock().clone()
    }

    /// The notifications delivered so far.
    pub fn notifications(&self) -> Vec<(TenantId, PluginNotification)> {
        self.notifications.lock().clone()
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        self.events.lock().clear();
        self.notifications.lock().clear();
    }
}

#[async_trait::async_trait]
impl Effects for RecordingEffects {
    async fn emit(&self, tenant: TenantId, event: PluginEvent) -> Result<(), EffectError> {
        self.events.lock().push((tenant, event));
        Ok(())
    }

    async fn notify(&self, tenant: TenantId, notification: PluginNotification) -> Result<(), EffectError> {
        self.notifications.lock().push((tenant, notification));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::block_on;
    use serde_json::json;

    #[test]
    fn the_recorder_keeps_effects_in_order() {
        let r = RecordingEffects::new();
        let event = |name: &str| PluginEvent {
            plugin: "p".to_owned(),
            target: EventTarget::Topic("grpX".to_owned()),
            name: name.to_owned(),
            payload: json!({}),
        };
        block_on(r.emit(TenantId(1), event("a"))).unwrap();
        block_on(r.emit(TenantId(2), event("b"))).unwrap();
        let names: Vec<_> = r.events().into_iter().map(|(t, e)| (t.0, e.name)).collect();
        assert_eq!(names, vec![(1, "a".to_owned()), (2, "b".to_owned())]);
        r.clear();
        assert!(r.events().is_empty());
    }
}
