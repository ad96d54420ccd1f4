//! What travels between nodes: each delivery as an [`Event`] (the payload of a bus envelope), where it is routed
//! ([`Event::route`]), and the key a receiver drops repeats by. The dispatcher publishes and applies events;
//! `local` applies them to this node's sessions. Both read this module, which reads neither.

use palaver_core::ports::{BusTarget, ControlScope, EventKind};
use palaver_core::{AccessMode, AuditStatus, Message, Seq, UserId};
use palaver_proto::{MsgPres, SeqRange};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One delivery, in the form it travels between nodes as an envelope's payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    /// A stored message: `{data}` to the readers attached to its topic, and `{pres what:"msg"}` on `me` to the
    /// online members who are not attached.
    Data { msg: WireMessage },
    /// A relayed note (`kp`, `recv`, `read`) as `{info}` to the topic's attached readers except the author's
    /// own session; `recv` and `read` also reach the author's other sessions through `{pres}` on `me`.
    Info { topic: String, from: UserId, what: String, seq: Option<Seq>, event: Option<String>, payload: Option<Value> },
    /// The same `{pres}` on `me` to every listed user's sessions that are attached to `me`.
    MePres { users: Vec<UserId>, pres: MsgPres },
    /// Messages were deleted: `{pres what:"del"}` to attached readers (all of them when hard, else only `by`).
    Deleted { topic: String, by: UserId, hard: bool, clear: i64, delseq: Vec<SeqRange> },
    /// The user lost the topic: their sessions are detached and told `{ctrl 205 "evicted"}`.
    Evict { topic: String, user: UserId },
    /// The topic was deleted: everyone attached is detached and told.
    TopicGone { topic: String },
    /// A user's effective mode in a topic changed: their attachments adopt it.
    Access { topic: String, user: UserId, mode: AccessMode },
    /// A subscription appeared or went away: cached member lists are dropped.
    MembersChanged { topic: String },
    /// The user gained a subscription elsewhere: their nodes list them as online members of it.
    Joined { topic: String, user: UserId },
    /// A business event in the `{info}` form (`what` "im" on `me`, or "group" on the topic).
    Business {
        to: BusinessTarget,
        event: String,
        payload: Value,
        /// The user whose action it reports (`from` of the `{info}`); `None` for the system.
        #[serde(default)]
        from: Option<UserId>,
    },
    /// A call event as `{info what:"call"}` to the sessions of `to` but `except` (`node/session`), or only to the
    /// one `session` names; on the P2P topic or on `me`, by Tinode's routing (`delivery/local.rs`).
    Call {
        topic: String,
        to: Vec<UserId>,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        except: Option<String>,
        from: UserId,
        seq: Seq,
        event: String,
        #[serde(default)]
        payload: Option<Value>,
    },
    /// Close sessions whose control version is older than `version` (an eviction or a revocation).
    Control { user: UserId, scope: ControlScope, version: u64, reason: String, except: Option<String> },
}

/// Whom a business event goes to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BusinessTarget {
    User(UserId),
    Topic(String),
}

/// A stored message as it travels: the fields a receiving node needs to render `{data}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WireMessage {
    pub topic: String,
    pub seq: Seq,
    pub created: i64,
    pub from: UserId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Map<String, Value>>,
    pub content: Value,
}

impl From<&Message> for WireMessage {
    fn from(m: &Message) -> Self {
        WireMessage {
            topic: m.topic.clone(),
            seq: m.seq,
            created: m.created,
            from: m.from,
            head: m.head.clone(),
            content: m.content.clone(),
        }
    }
}

impl WireMessage {
    pub(crate) fn into_message(self) -> Message {
        Message {
            topic: self.topic,
            seq: self.seq,
            created: self.created,
            from: self.from,
            head: self.head,
            content: self.content,
            client_mid: None,
            audit: AuditStatus::Pass,
            risk_flags: Vec::new(),
        }
    }
}

impl Event {
    /// The envelope kind and bus target of the event.
    pub(crate) fn route(&self) -> (EventKind, BusTarget) {
        match self {
            Event::Data { msg } if msg.topic.starts_with("p2p") => {
                // Both parties' nodes, found from their presence: a P2P topic's online sets only know the
                // sides that were online when it was created.
                let users = palaver_core::p2p_users(&msg.topic).map(|(a, b)| vec![a, b]).unwrap_or_default();
                (EventKind::Message, BusTarget::Users(users))
            }
            Event::Data { msg } => (EventKind::Message, BusTarget::Topic(msg.topic.clone())),
            Event::Deleted { topic, .. } => (EventKind::Message, BusTarget::Topic(topic.clone())),
            Event::Info { topic, .. }
            | Event::TopicGone { topic }
            | Event::Access { topic, .. }
            | Event::MembersChanged { topic } => (EventKind::TopicEvent, BusTarget::Topic(topic.clone())),
            Event::Evict { user, .. } | Event::Joined { user, .. } => (EventKind::UserEvent, BusTarget::User(*user)),
            Event::MePres { users, pres } => {
                let kind =
                    if matches!(pres.what.as_str(), "on" | "off") { EventKind::Presence } else { EventKind::UserEvent };
                match users.as_slice() {
                    [one] => (kind, BusTarget::User(*one)),
                    _ => (kind, BusTarget::Users(users.clone())),
                }
            }
            Event::Business { to: BusinessTarget::User(u), .. } => (EventKind::UserEvent, BusTarget::User(*u)),
            Event::Business { to: BusinessTarget::Topic(t), .. } => {
                (EventKind::TopicEvent, BusTarget::Topic(t.clone()))
            }
            Event::Call { session: Some(key), .. } => {
                let (node, sid) = key.rsplit_once('/').unwrap_or(("", key.as_str()));
                (EventKind::UserEvent, BusTarget::Session { node_id: node.to_owned(), session: sid.to_owned() })
            }
            Event::Call { to, .. } => match to.as_slice() {
                [one] => (EventKind::UserEvent, BusTarget::User(*one)),
                _ => (EventKind::UserEvent, BusTarget::Users(to.clone())),
            },
            Event::Control { user, scope, .. } => {
                let target = match scope {
                    ControlScope::User => BusTarget::User(*user),
                    ControlScope::Device(d) => BusTarget::Device { user: *user, device: d.clone() },
                };
                (EventKind::SessionControl, target)
            }
        }
    }

    pub(crate) fn dedup_key(&self) -> Option<String> {
        match self {
            Event::Data { msg } => Some(format!("message:{}:{}", msg.topic, msg.seq)),
            Event::Control { user, version, .. } => Some(format!("control:{user}:{version}")),
            _ => None,
        }
    }
}

/// True if the envelope's routing target is the one the event itself implies, so that a consumer never
/// applies an event under a target (and so a tenant's channel) it was not published for.
pub(crate) fn matches_target(event: &Event, target: &BusTarget) -> bool {
    event.route().1 == *target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_route() {
        let e = Event::Control {
            user: UserId(5),
            scope: ControlScope::Device("platform:web".into()),
            version: 3,
            reason: "kicked".into(),
            except: None,
        };
        let text = serde_json::to_string(&e).unwrap();
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back.route().1, BusTarget::Device { user: UserId(5), device: "platform:web".into() });
        let data = Event::Data {
            msg: WireMessage {
                topic: "grpX".into(),
                seq: 7,
                created: 1,
                from: UserId(1),
                head: None,
                content: Value::from("hi"),
            },
        };
        assert_eq!(data.route(), (EventKind::Message, BusTarget::Topic("grpX".into())));
        assert_eq!(data.dedup_key().as_deref(), Some("message:grpX:7"));
        assert!(matches_target(&data, &BusTarget::Topic("grpX".into())));
        assert!(!matches_target(&data, &BusTarget::Topic("grpY".into())));
    }
}
