//! Server → client messages (`{ctrl}`, `{data}`, `{meta}`, `{pres}`, `{info}`) with Tinode's field names.
//! Absent optional fields are left out of the JSON, as Tinode does.

use crate::{Code, SeqRange, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

/// One server message; serialises as `{"ctrl":{…}}`, `{"data":{…}}` and so on.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(clippy::large_enum_variant, reason = "server messages are built, serialised once and dropped")]
pub enum ServerMsg {
    Ctrl(MsgCtrl),
    Data(MsgData),
    Meta(MsgMeta),
    Pres(MsgPres),
    Info(MsgInfo),
}

/// `{ctrl}`: the reply to a request.
#[derive(Debug, Clone, Serialize)]
pub struct MsgCtrl {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub code: u16,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    pub ts: Timestamp,
}

impl MsgCtrl {
    /// A ctrl with the canonical text of `code`.
    pub fn new(id: Option<&str>, topic: Option<&str>, code: Code, ts: Timestamp) -> Self {
        MsgCtrl {
            id: id.map(str::to_owned),
            topic: topic.map(str::to_owned),
            code: code.code(),
            text: code.text().to_owned(),
            params: None,
            ts,
        }
    }

    /// Replaces the text, for replies whose reason is more precise than the canonical one.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Adds `params`.
    pub fn with_params(mut self, params: Value) -> Self {
        self.params = Some(params);
        self
    }
}

/// `{data}`: one stored message.
#[derive(Debug, Clone, Serialize)]
pub struct MsgData {
    pub topic: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub ts: Timestamp,
    pub seq: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<Map<String, Value>>,
    pub content: Value,
}

/// An access mode triple as Tinode reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AccessTriple {
    pub want: String,
    pub given: String,
    pub mode: String,
}

/// Default access (`defacs`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DefaultAccess {
    pub auth: String,
    pub anon: String,
}

/// When and with which client a user was last seen.
#[derive(Debug, Clone, Serialize)]
pub struct LastSeen {
    pub when: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ua: Option<String>,
}

/// A topic description in `{meta desc}`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopicDesc {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub touched: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub online: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defacs: Option<DefaultAccess>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acs: Option<AccessTriple>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subcnt: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<LastSeen>,
}

/// One subscription in `{meta sub}`: a topic's member, or, on `me`, one of the user's topics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopicSub {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub touched: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub online: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acs: Option<AccessTriple>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<LastSeen>,
}

/// Deleted ranges in `{meta del}`.
#[derive(Debug, Clone, Serialize)]
pub struct DelValues {
    pub clear: i64,
    pub delseq: Vec<SeqRange>,
}

/// `{meta}`: topic metadata.
#[derive(Debug, Clone, Serialize)]
pub struct MsgMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub topic: String,
    pub ts: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<TopicDesc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<Vec<TopicSub>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub del: Option<DelValues>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// The user's credentials (`{get what:"cred"}` on `me`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cred: Option<Vec<CredentialView>>,
}

/// One credential as `{meta cred}` lists it; `done` is left out while unconfirmed, as Tinode does.
#[derive(Debug, Clone, Serialize)]
pub struct CredentialView {
    pub meth: String,
    pub val: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
}

impl MsgMeta {
    /// An empty meta for `topic`, to fill one part of.
    pub fn new(id: Option<&str>, topic: &str, ts: Timestamp) -> Self {
        MsgMeta {
            id: id.map(str::to_owned),
            topic: topic.to_owned(),
            ts,
            desc: None,
            sub: None,
            del: None,
            tags: None,
            cred: None,
        }
    }
}

/// An access-mode change in `{pres}` (travels as `dacs`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct AccessDelta {
    pub want: String,
    pub given: String,
}

/// `{pres}`: a presence or topic-change notification. Has no `ts`.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct MsgPres {
    pub topic: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    pub what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ua: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delseq: Option<Vec<SeqRange>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tgt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub act: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dacs: Option<AccessDelta>,
}

/// `{info}`: a relayed `{note}` (typing, read, recv).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct MsgInfo {
    pub topic: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    pub from: String,
    pub what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}
