//! Client → server messages (`{hi}`, `{acc}`, `{login}`, `{sub}`, `{leave}`, `{pub}`, `{get}`, `{set}`, `{del}`,
//! `{note}`), with Tinode's field names. Unknown fields are ignored, as Tinode does.

use crate::Timestamp;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One decoded client message.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "one message lives at a time per session; boxing would add an allocation per frame"
)]
pub enum ClientMsg {
    Hi(MsgHi),
    Acc(MsgAcc),
    Login(MsgLogin),
    Sub(MsgSub),
    Leave(MsgLeave),
    Pub(MsgPub),
    Get(MsgGet),
    Set(MsgSet),
    Del(MsgDel),
    Note(MsgNote),
}

impl ClientMsg {
    /// The request id the client chose, echoed in the reply. `{note}` has none.
    pub fn id(&self) -> Option<&str> {
        match self {
            ClientMsg::Hi(m) => m.id.as_deref(),
            ClientMsg::Acc(m) => m.id.as_deref(),
            ClientMsg::Login(m) => m.id.as_deref(),
            ClientMsg::Sub(m) => m.id.as_deref(),
            ClientMsg::Leave(m) => m.id.as_deref(),
            ClientMsg::Pub(m) => m.id.as_deref(),
            ClientMsg::Get(m) => m.id.as_deref(),
            ClientMsg::Set(m) => m.id.as_deref(),
            ClientMsg::Del(m) => m.id.as_deref(),
            ClientMsg::Note(_) => None,
        }
    }

    /// The topic the message addresses, if it has one.
    pub fn topic(&self) -> Option<&str> {
        match self {
            ClientMsg::Sub(m) => Some(&m.topic),
            ClientMsg::Leave(m) => Some(&m.topic),
            ClientMsg::Pub(m) => Some(&m.topic),
            ClientMsg::Get(m) => Some(&m.topic),
            ClientMsg::Set(m) => Some(&m.topic),
            ClientMsg::Del(m) => Some(&m.topic),
            ClientMsg::Note(m) => Some(&m.topic),
            ClientMsg::Hi(_) | ClientMsg::Acc(_) | ClientMsg::Login(_) => None,
        }
    }

    /// The message kind as it appears on the wire, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientMsg::Hi(_) => "hi",
            ClientMsg::Acc(_) => "acc",
            ClientMsg::Login(_) => "login",
            ClientMsg::Sub(_) => "sub",
            ClientMsg::Leave(_) => "leave",
            ClientMsg::Pub(_) => "pub",
            ClientMsg::Get(_) => "get",
            ClientMsg::Set(_) => "set",
            ClientMsg::Del(_) => "del",
            ClientMsg::Note(_) => "note",
        }
    }
}

/// `{hi}`: the handshake, always first.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgHi {
    pub id: Option<String>,
    pub ver: Option<String>,
    pub ua: Option<String>,
    pub dev: Option<String>,
    pub platf: Option<String>,
    pub lang: Option<String>,
    #[serde(default)]
    pub bkg: bool,
}

/// A credential: an address to confirm (`meth`, `val`) or a confirmation code (`meth`, `resp`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Credential {
    pub meth: Option<String>,
    pub val: Option<String>,
    pub resp: Option<String>,
    pub params: Option<Value>,
}

/// Default access for authenticated and anonymous users.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DefaultAcs {
    pub auth: Option<String>,
    pub anon: Option<String>,
}

/// The `desc` part of a `set` query or of `{acc}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SetDesc {
    pub defacs: Option<DefaultAcs>,
    pub public: Option<Value>,
    pub private: Option<Value>,
    pub trusted: Option<Value>,
}

/// `{acc}`: create an account or change the current one.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgAcc {
    pub id: Option<String>,
    pub user: Option<String>,
    pub scheme: Option<String>,
    /// Standard padded base64 of `login:password` for the basic scheme.
    pub secret: Option<String>,
    #[serde(default)]
    pub login: bool,
    pub tags: Option<Vec<String>>,
    pub cred: Option<Vec<Credential>>,
    pub desc: Option<SetDesc>,
    pub token: Option<String>,
    /// A one-off credential for this request only (Tinode's): with `tmpscheme:"basic"`, `tmpsecret` is base64 of
    /// `login:current password`, which a password change must carry when the server asks for it.
    pub tmpscheme: Option<String>,
    pub tmpsecret: Option<String>,
}

/// `{login}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgLogin {
    pub id: Option<String>,
    pub scheme: Option<String>,
    pub secret: Option<String>,
    pub cred: Option<Vec<Credential>>,
}

/// The `sub` part of a `set` query: change a subscription's access mode.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SetSub {
    pub user: Option<String>,
    pub mode: Option<String>,
}

/// What `{sub}` and `{set}` may change.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SetQuery {
    pub desc: Option<SetDesc>,
    pub sub: Option<SetSub>,
    pub tags: Option<Vec<String>>,
    pub cred: Option<Credential>,
    pub aux: Option<Map<String, Value>>,
}

/// `ims`: "if modified since".
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GetOpts {
    pub ims: Option<Timestamp>,
    pub user: Option<String>,
    pub topic: Option<String>,
    pub limit: Option<i64>,
}

/// A seq window: `since` inclusive, `before` exclusive; or explicit `ranges`, which take precedence.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BrowseOpts {
    pub since: Option<i64>,
    pub before: Option<i64>,
    pub limit: Option<i64>,
    /// Half-open ranges to fetch (what `tinode-sdk` sends to page back through history).
    pub ranges: Option<Vec<SeqRange>>,
}

/// What `{get}` (or the `get` of `{sub}`) asks for. `what` is a space-separated list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GetQuery {
    #[serde(default)]
    pub what: String,
    pub desc: Option<GetOpts>,
    pub sub: Option<GetOpts>,
    pub data: Option<BrowseOpts>,
    pub del: Option<BrowseOpts>,
}

/// `{sub}`: attach to a topic, creating or joining it if needed.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgSub {
    pub id: Option<String>,
    pub topic: String,
    #[serde(default)]
    pub bkg: bool,
    pub set: Option<SetQuery>,
    pub get: Option<GetQuery>,
}

/// `{leave}`: detach, and with `unsub` also unsubscribe.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgLeave {
    pub id: Option<String>,
    pub topic: String,
    #[serde(default)]
    pub unsub: bool,
}

/// `{pub}`: publish a message.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgPub {
    pub id: Option<String>,
    pub topic: String,
    #[serde(default)]
    pub noecho: bool,
    pub head: Option<Map<String, Value>>,
    pub content: Option<Value>,
    /// Palaver extension: a client-chosen message id that makes retries idempotent.
    pub client_mid: Option<String>,
    /// The out-of-band files the message references: the top-level `extra.attachments` of the frame (download
    /// URLs), moved here by the decoder.
    #[serde(skip)]
    pub attachments: Vec<String>,
}

/// The top-level `extra` of a client frame (Tinode's): what a message or a profile references out of band.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Extra {
    #[serde(default)]
    pub(crate) attachments: Vec<String>,
}

/// `{get}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgGet {
    pub id: Option<String>,
    pub topic: String,
    #[serde(flatten)]
    pub query: GetQuery,
}

/// `{set}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgSet {
    pub id: Option<String>,
    pub topic: String,
    #[serde(flatten)]
    pub query: SetQuery,
}

/// A half-open seq range `[low, hi)`; a missing `hi` means the single seq `low`.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct SeqRange {
    pub low: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<i64>,
}

/// `{del}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgDel {
    pub id: Option<String>,
    /// Empty for `what:"user"` and `what:"cred"`, which tinode-sdk sends without a topic.
    #[serde(default)]
    pub topic: String,
    pub what: Option<String>,
    #[serde(default)]
    pub hard: bool,
    pub delseq: Option<Vec<SeqRange>>,
    pub user: Option<String>,
    pub cred: Option<Credential>,
}

/// `{note}`: typing, read and receive receipts. No id and no reply.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MsgNote {
    pub topic: String,
    pub what: String,
    pub seq: Option<i64>,
    pub unread: Option<i64>,
    pub event: Option<String>,
    pub payload: Option<Value>,
}
