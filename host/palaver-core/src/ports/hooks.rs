//! Hooks into the publish path, where plugins (content moderation first) judge a message before it takes a seq.

use crate::{TenantId, TopicKind, UserId};
use serde_json::{Map, Value};

/// What a publish hook knows about the message it judges.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishContext {
    pub tenant: TenantId,
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub kind: TopicKind,
    pub from: UserId,
    pub session: String,
    pub node: String,
}

/// A hook's judgement of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum PublishVerdict {
    /// Store and deliver as is.
    Allow,
    /// Refuse: nothing is stored and no seq is taken; the client gets ctrl `code` with `reason`.
    Reject { code: u16, reason: String },
    /// Store and deliver this content (and head) instead.
    Rewrite { content: Value, head: Option<Map<String, Value>> },
    /// Store with audit status pending and these risk flags; deliver nothing until released.
    Hold { flags: Vec<String> },
}

/// Judges messages before they are stored. Implementations apply their own failure policy: a hook that fails
/// open returns `Allow` on a fault, one that fails closed returns `Reject`.
#[async_trait::async_trait]
pub trait PublishHook: Send + Sync {
    /// The verdict on one message.
    async fn before_publish(
        &self,
        ctx: &PublishContext,
        content: &Value,
        head: Option<&Map<String, Value>>,
    ) -> PublishVerdict;
}

/// No hooks: every message is allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

#[async_trait::async_trait]
impl PublishHook for NoHooks {
    async fn before_publish(&self, _: &PublishContext, _: &Value, _: Option<&Map<String, Value>>) -> PublishVerdict {
        PublishVerdict::Allow
    }
}
