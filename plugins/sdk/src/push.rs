//! The push filter side of the SDK: the push a filter sees ([`Push`]) and the decision it gives
//! ([`PushDecision`]), for plugins of world `push-filter` (`before-push`, since `palaver:plugin@0.1.1`).

use crate::bindings::push_filter::exports::palaver::plugin::before_push as wit;
use crate::types::TopicKind;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One offline push to one user, about one stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub topic_kind: TopicKind,
    pub seq: i64,
    /// Unix ms the message was stored.
    pub ts_ms: u64,
    /// The message's sender, `usr…`.
    pub sender: String,
    /// The user about to be pushed, `usr…`.
    pub recipient: String,
    /// Tinode's `what`: `msg` for a message.
    pub what: String,
    /// A push without alert (the sender's other devices).
    pub silent: bool,
    /// The platforms of the recipient's devices this push goes to (`android`, `ios`, `web`).
    pub platforms: Vec<String>,
    /// Up to 128 characters of the text, only when the tenant enabled previews.
    pub preview: Option<String>,
    /// The users the message mentions (Drafty `MN` entities).
    pub mentions: Vec<String>,
    pub head: Option<Map<String, Value>>,
    /// The alert text as it would be sent (empty when silent).
    pub body: String,
    /// The data fields as they would be sent.
    pub data: BTreeMap<String, String>,
}

impl Push {
    /// A non-silent push of a group message to `recipient`, as tests build them.
    pub fn new(recipient: &str) -> Push {
        Push {
            topic: "grpTest".to_owned(),
            topic_kind: TopicKind::Group,
            seq: 1,
            ts_ms: 0,
            sender: "usrASNFZ4mrze8".to_owned(),
            recipient: recipient.to_owned(),
            what: "msg".to_owned(),
            silent: false,
            platforms: vec!["android".to_owned()],
            preview: None,
            mentions: Vec::new(),
            head: None,
            body: "New message".to_owned(),
            data: BTreeMap::new(),
        }
    }

    /// Whether the message mentions the recipient.
    pub fn mentions_recipient(&self) -> bool {
        self.mentions.contains(&self.recipient)
    }

    pub(crate) fn from_wit(p: wit::PushInfo) -> Push {
        let head = p.head.and_then(|h| match serde_json::from_str(&h) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        });
        Push {
            topic: p.topic,
            topic_kind: p.topic_kind.into(),
            seq: p.seq,
            ts_ms: p.ts_ms,
            sender: p.call.actor,
            recipient: p.recipient,
            what: p.what,
            silent: p.silent,
            platforms: p.platforms,
            preview: p.preview,
            mentions: p.mentions,
            head,
            body: p.body,
            data: p.data.into_iter().collect(),
        }
    }
}

/// What happens to a push. The host refuses (and then sends the push unchanged) a rewrite that touches the
/// locating fields (`type`, `tenant_id`, `topic`, `seq`, `what`, `silent`, `xfrom`, `ts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushDecision {
    /// Send it as it is.
    Keep,
    /// Send nothing to this user, for this reason.
    Drop(String),
    /// Send it after this many milliseconds (the host caps the wait).
    Delay(u64),
    /// Send it changed: a new alert text, data fields set, data fields removed.
    Rewrite { body: Option<String>, set: BTreeMap<String, String>, remove: Vec<String> },
}

impl PushDecision {
    /// Drops the push.
    pub fn drop(reason: impl Into<String>) -> PushDecision {
        PushDecision::Drop(reason.into())
    }

    /// Replaces the alert text.
    pub fn body(body: impl Into<String>) -> PushDecision {
        PushDecision::Rewrite { body: Some(body.into()), set: BTreeMap::new(), remove: Vec::new() }
    }

    pub(crate) fn into_wit(self) -> wit::PushDecision {
        match self {
            PushDecision::Keep => wit::PushDecision::Keep,
            PushDecision::Drop(r) => wit::PushDecision::Drop(r),
            PushDecision::Delay(ms) => wit::PushDecision::Delay(ms),
            PushDecision::Rewrite { body, set, remove } => {
                wit::PushDecision::Rewrite(wit::PushRewrite { body, data: set.into_iter().collect(), remove })
            }
        }
    }
}
