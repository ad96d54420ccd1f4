//! The listener side of the SDK: a stored message ([`Published`]) and an account change ([`AccountEvent`]), for
//! plugins of world `listener` (`after-publish` and `on-account`, since `palaver:plugin@0.1.3`). Both arrive off
//! the request path, at least once: `attempt` says which delivery this is.

use crate::bindings::listener::exports::palaver::plugin::after_publish as wit_published;
use crate::bindings::listener::exports::palaver::plugin::on_account as wit_account;
use crate::types::{TopicKind, text_of};
use serde_json::{Map, Value};

/// One stored message. Deliveries repeat (a node died mid-delivery, or a listener answered `Err`), so act on it
/// idempotently by `(topic, seq)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub topic_kind: TopicKind,
    pub seq: i64,
    /// Unix ms the message was stored.
    pub ts_ms: u64,
    /// The sender, `usr…`.
    pub sender: String,
    /// The content as stored: a string, or a Drafty document.
    pub content: Value,
    pub head: Option<Map<String, Value>>,
    /// 1 on the first delivery to this plugin, then 2, 3, … on the host's retries.
    pub attempt: u32,
}

impl Published {
    /// The first delivery of group message 1 with this content, as tests build them.
    pub fn new(content: impl Into<Value>) -> Published {
        Published {
            topic: "grpTest".to_owned(),
            topic_kind: TopicKind::Group,
            seq: 1,
            ts_ms: 0,
            sender: "usrASNFZ4mrze8".to_owned(),
            content: content.into(),
            head: None,
            attempt: 1,
        }
    }

    /// The plain text: the content itself if it is a string, else a Drafty document's `txt`.
    pub fn text(&self) -> Option<&str> {
        text_of(&self.content)
    }

    /// A key naming this message, the same on every delivery: `<topic>/<seq>`, for idempotency records.
    pub fn key(&self) -> String {
        format!("{}/{}", self.topic, self.seq)
    }

    pub(crate) fn from_wit(m: wit_published::PublishedMessage) -> Published {
        // The host sends JSON; `null` stands for anything else rather than losing the delivery.
        let content = serde_json::from_str(&m.content).unwrap_or(Value::Null);
        let head = m.head.and_then(|h| match serde_json::from_str(&h) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        });
        Published {
            topic: m.ctx.topic,
            topic_kind: m.ctx.topic_kind.into(),
            seq: m.seq,
            ts_ms: m.ts_ms,
            sender: m.ctx.call.actor,
            content,
            head,
            attempt: m.attempt,
        }
    }
}

/// What happened to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountChange {
    /// Signed up, or created by an operator.
    Created,
    /// Its public profile or tags changed.
    Updated,
    /// An operator suspended it: it cannot log in, and its sessions were closed.
    Suspended,
    /// An operator made a suspended account active again.
    Reactivated,
    /// Deleted (by the user or an operator); its data is gone or going.
    Deleted,
}

impl AccountChange {
    /// The change's name, as the WIT spells it: `created`, `updated`, `suspended`, `reactivated`, `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            AccountChange::Created => "created",
            AccountChange::Updated => "updated",
            AccountChange::Suspended => "suspended",
            AccountChange::Reactivated => "reactivated",
            AccountChange::Deleted => "deleted",
        }
    }

    /// The change named `name` (as [`AccountChange::as_str`] spells it).
    pub fn parse(name: &str) -> Option<AccountChange> {
        [
            AccountChange::Created,
            AccountChange::Updated,
            AccountChange::Suspended,
            AccountChange::Reactivated,
            AccountChange::Deleted,
        ]
        .into_iter()
        .find(|c| c.as_str() == name)
    }
}

/// One change of one account. Deliveries repeat like [`Published`]'s: drop them by [`AccountEvent::id`].
#[derive(Debug, Clone, PartialEq)]
pub struct AccountEvent {
    /// The event's id, the same on every delivery of it: drop repeats by it.
    pub id: String,
    /// The account, `usr…`.
    pub user: String,
    /// Who made the change: the user, or the account itself when an operator did (then `by_operator`).
    pub actor: String,
    /// Whether an operator (the admin API, an admin command) made the change.
    pub by_operator: bool,
    pub change: AccountChange,
    /// Unix ms of the change.
    pub ts_ms: u64,
    /// The public profile after the change, if any (none once deleted).
    pub public: Option<Value>,
    /// The tags after the change (empty once deleted).
    pub tags: Vec<String>,
    /// 1 on the first delivery to this plugin, then 2, 3, … on the host's retries.
    pub attempt: u32,
}

impl AccountEvent {
    /// The first delivery of `change` to `user`, made by the user, as tests build them; its id is `test`.
    pub fn new(user: &str, change: AccountChange) -> AccountEvent {
        AccountEvent {
            id: "test".to_owned(),
            user: user.to_owned(),
            actor: user.to_owned(),
            by_operator: false,
            change,
            ts_ms: 0,
            public: None,
            tags: Vec::new(),
            attempt: 1,
        }
    }

    pub(crate) fn from_wit(e: wit_account::AccountEvent) -> AccountEvent {
        AccountEvent {
            id: e.id,
            user: e.user,
            actor: e.call.actor,
            by_operator: e.by_operator,
            change: match e.change {
                wit_account::AccountChange::Created => AccountChange::Created,
                wit_account::AccountChange::Updated => AccountChange::Updated,
                wit_account::AccountChange::Suspended => AccountChange::Suspended,
                wit_account::AccountChange::Reactivated => AccountChange::Reactivated,
                wit_account::AccountChange::Deleted => AccountChange::Deleted,
            },
            ts_ms: e.ts_ms,
            public: e.public.and_then(|p| serde_json::from_str(&p).ok()),
            tags: e.tags,
            attempt: e.attempt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_key_read_the_message() {
        let mut m = Published::new(json!({ "txt": "hello" }));
        m.seq = 7;
        assert_eq!(m.text(), Some("hello"));
        assert_eq!(m.key(), "grpTest/7");
        assert_eq!(Published::new("plain").text(), Some("plain"));
        assert_eq!(Published::new(json!(3)).text(), None);
    }

    #[test]
    fn change_names_round_trip() {
        for c in [
            AccountChange::Created,
            AccountChange::Updated,
            AccountChange::Suspended,
            AccountChange::Reactivated,
            AccountChange::Deleted,
        ] {
            assert_eq!(AccountChange::parse(c.as_str()), Some(c));
        }
        assert_eq!(AccountChange::parse("renamed"), None);
        let e = AccountEvent::new("usrA", AccountChange::Suspended);
        assert_eq!((e.id.as_str(), e.by_operator, e.actor.as_str()), ("test", false, "usrA"));
    }
}
