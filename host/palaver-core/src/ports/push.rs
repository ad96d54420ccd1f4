//! Offline push: the task the publish path leaves on the queue (`im.push.task`), the message a provider sends to
//! one device, the provider port (FCM, APNs, JPush, a webhook) and the dedup port that keeps a redelivered task
//! from pushing twice.

use crate::{Seq, StoreResult, TenantId, UnixMillis, UserId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One stored message to push about, as produced on the push topic (JSON). It carries locating fields only,
/// plus the preview text when the tenant enabled previews.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushTask {
    pub tenant: TenantId,
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub seq: Seq,
    pub from: UserId,
    /// Unix ms the message was stored.
    pub ts: UnixMillis,
    /// `what` of Tinode's push payload: `msg` for a stored message, `read` for a read receipt, `sub` for a
    /// subscription change. For `read` and `sub`, `seq` is the read seq and the change's Unix ms respectively.
    pub what: String,
    /// The content's `head.mime`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// `head.webrtc` of a call message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webrtc: Option<String>,
    /// At most 128 characters of the text, only when previews are enabled and the message is not held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Users with a session attached to the topic on the publishing node when it was stored: they saw it.
    #[serde(default)]
    pub attached: Vec<UserId>,
    /// The device the sender published from (its id), which gets no push at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_device: Option<String>,
    /// The message's head, for push filters (`before-push`). Tasks written before it existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<serde_json::Map<String, serde_json::Value>>,
    /// The users the message mentions (Drafty `MN` entities), at most [`MAX_MENTIONS`], for push filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<UserId>,
    /// For `read` and `sub`: the one user whose devices get a silent push (the reader, the user whose
    /// subscription changed). `None` for `msg`, whose recipients are the topic's subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<UserId>,
}

/// The most mentions a push task carries: enough for a mention-only rule, bounded whatever the message says.
pub const MAX_MENTIONS: usize = 32;

/// The users a Drafty document mentions (`ent` entries of type `MN` whose `data.val` is a user id), in order,
/// without repeats, at most [`MAX_MENTIONS`].
pub fn mentions_of(content: &serde_json::Value) -> Vec<UserId> {
    let mut out = Vec::new();
    let Some(ents) = content.get("ent").and_then(serde_json::Value::as_array) else { return out };
    for e in ents {
        if e.get("tp").and_then(serde_json::Value::as_str) != Some("MN") {
            continue;
        }
        let val = e.get("data").and_then(|d| d.get("val")).and_then(serde_json::Value::as_str);
        if let Some(Ok(u)) = val.map(UserId::parse)
            && !out.contains(&u)
        {
            out.push(u);
            if out.len() == MAX_MENTIONS {
                break;
            }
        }
    }
    out
}

/// What one device is sent: Tinode's push fields plus the minimal locating fields, all as strings (FCM's `data`
/// map takes strings only), and whether it is silent (no alert: the sender's other devices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushMessage {
    pub data: BTreeMap<String, String>,
    pub silent: bool,
    /// A short alert text for providers that show one (`preview` when allowed, else a generic line); empty when
    /// silent.
    pub body: String,
}

/// Why a send did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The provider says the token is gone (FCM `UNREGISTERED`, APNs 410): the device is removed.
    #[error("the token is no longer registered")]
    Unregistered,
    /// Worth trying again (429, 5xx, a network failure), after `after_ms` if the provider said so.
    #[error("retryable: {reason}")]
    Retry { reason: String, after_ms: Option<u64> },
    /// A refusal that will not change (bad request, bad credentials): recorded, not retried.
    #[error("failed: {reason}")]
    Failed { reason: String },
}

impl PushError {
    /// A short, bounded label for metrics: `unregistered`, `retry` or `failed`.
    pub fn label(&self) -> &'static str {
        match self {
            PushError::Unregistered => "unregistered",
            PushError::Retry { .. } => "retry",
            PushError::Failed { .. } => "failed",
        }
    }
}

/// One push provider. `device.provider` names which provider a device belongs to.
#[async_trait::async_trait]
pub trait PushProvider: Send + Sync {
    /// The provider's name as stored in `Device::provider` and in metrics labels.
    fn name(&self) -> &'static str;

    /// Sends one message to one device.
    async fn send(&self, tenant: TenantId, device: &crate::ports::Device, msg: &PushMessage) -> Result<(), PushError>;
}

/// Push deduplication by `(topic, seq, user)`: Redis `SET NX` with a TTL in scale-out, a bounded map in process.
#[async_trait::async_trait]
pub trait PushDedup: Send + Sync {
    /// True the first time `(tenant, topic, seq, user)` is claimed within `ttl_ms`; false for a repeat.
    async fn claim(&self, tenant: TenantId, topic: &str, seq: Seq, user: UserId, ttl_ms: u64) -> StoreResult<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_are_the_mn_entities_once_each_and_bounded() {
        let (a, b) = (UserId(1), UserId(2));
        let doc = json!({ "txt": "hi @a @b @a", "ent": [
            { "tp": "MN", "data": { "val": a.to_string() } },
            { "tp": "LN", "data": { "url": "https://x" } },
            { "tp": "MN", "data": { "val": b.to_string() } },
            { "tp": "MN", "data": { "val": a.to_string() } },
            { "tp": "MN", "data": { "val": "not a user" } },
        ]});
        assert_eq!(mentions_of(&doc), vec![a, b]);
        assert!(mentions_of(&json!("plain text")).is_empty());
        let many: Vec<_> = (1..=100).map(|i| json!({ "tp": "MN", "data": { "val": UserId(i).to_string() } })).collect();
        assert_eq!(mentions_of(&json!({ "txt": "", "ent": many })).len(), MAX_MENTIONS);
    }
}
