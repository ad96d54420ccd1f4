//! Hooks into the publish path, where plugins (content moderation first) judge a message before it takes a seq,
//! and into the push worker, where they decide whether an offline push goes out.

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

/// One push to one user, as a push hook sees it: the task's message, the recipient, and the push as built.
#[derive(Debug, Clone, PartialEq)]
pub struct PushContext<'a> {
    pub task: &'a crate::ports::PushTask,
    pub recipient: UserId,
    /// The stored topic's kind (`Group` or `P2p`).
    pub kind: TopicKind,
    /// The platforms of the devices about to be pushed.
    pub platforms: Vec<String>,
    pub message: &'a crate::ports::PushMessage,
}

/// A push hook's decision on one push to one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushDecision {
    /// Send it as built.
    Keep,
    /// Send nothing to this user.
    Drop { reason: String },
    /// Send it after `ms` milliseconds (the worker caps the wait), as rewritten if `rewrite` says so.
    Delay { ms: u64, rewrite: Option<crate::ports::PushMessage> },
    /// Send this message instead (the hook kept the locating fields).
    Rewrite(crate::ports::PushMessage),
}

/// Decides, per recipient, whether an offline push goes out. Implementations fail open: a fault keeps the push.
#[async_trait::async_trait]
pub trait PushHook: Send + Sync {
    /// The decision on one push to one user.
    async fn before_push(&self, ctx: &PushContext<'_>) -> PushDecision;

    /// False when no push filter could run for `tenant`: the worker then skips building the hook's input.
    fn filters(&self, tenant: crate::TenantId) -> bool;
}

#[async_trait::async_trait]
impl PushHook for NoHooks {
    async fn before_push(&self, _: &PushContext<'_>) -> PushDecision {
        PushDecision::Keep
    }

    fn filters(&self, _: crate::TenantId) -> bool {
        false
    }
}
