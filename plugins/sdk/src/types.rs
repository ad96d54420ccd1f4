//! The idiomatic types a plugin works with: the message it judges, the verdict it gives, the command it runs and
//! the outcome it returns, plus the directory's records. JSON travels as `serde_json::Value`, never as text.

use crate::bindings::wit;
use palaver_api::{CommandName, Facts, Family, Reason};
use serde_json::{Map, Value};
use std::fmt;

/// What a topic name denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKind {
    Group,
    P2p,
    Me,
    Fnd,
    Sys,
}

impl From<wit::TopicKind> for TopicKind {
    fn from(k: wit::TopicKind) -> Self {
        match k {
            wit::TopicKind::Group => TopicKind::Group,
            wit::TopicKind::P2p => TopicKind::P2p,
            wit::TopicKind::Me => TopicKind::Me,
            wit::TopicKind::Fnd => TopicKind::Fnd,
            wit::TopicKind::Sys => TopicKind::Sys,
        }
    }
}

/// Who is calling, from where.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallInfo {
    pub tenant: u64,
    /// The acting user, `usr…`.
    pub actor: String,
    pub session: String,
    pub node: String,
    pub request_id: String,
}

impl From<wit::CallContext> for CallInfo {
    fn from(c: wit::CallContext) -> Self {
        CallInfo { tenant: c.tenant, actor: c.actor, session: c.session, node: c.node, request_id: c.request_id }
    }
}

/// A message on its way to a topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub topic_kind: TopicKind,
    /// A string, or a Drafty document (`{"txt": …, "fmt": […], "ent": […]}`).
    pub content: Value,
    pub head: Option<Map<String, Value>>,
}

impl Message {
    /// A group message with this content, as tests build them.
    pub fn new(content: impl Into<Value>) -> Message {
        Message { topic: "grpTest".to_owned(), topic_kind: TopicKind::Group, content: content.into(), head: None }
    }

    /// The plain text: the content itself if it is a string, else a Drafty document's `txt`.
    pub fn text(&self) -> Option<&str> {
        text_of(&self.content)
    }

    /// The URLs of a Drafty document's link entities (`tp: "LN"`).
    pub fn link_entities(&self) -> Vec<&str> {
        let Some(ents) = self.content.get("ent").and_then(Value::as_array) else { return Vec::new() };
        ents.iter()
            .filter(|e| e.get("tp").and_then(Value::as_str) == Some("LN"))
            .filter_map(|e| e.get("data")?.get("url")?.as_str())
            .collect()
    }
}

/// The plain text of message content: the content itself if it is a string, else a Drafty document's `txt`.
pub(crate) fn text_of(content: &Value) -> Option<&str> {
    match content {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("txt").and_then(Value::as_str),
        _ => None,
    }
}

/// The judgement of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Store and deliver it as is.
    Allow,
    /// Refuse it: no seq is taken and the client gets ctrl `code` (400–599) with `reason`.
    Reject { code: u16, reason: String },
    /// Store and deliver this content (and head) instead.
    Rewrite { content: Value, head: Option<Map<String, Value>> },
    /// Store it pending review with these risk flags; deliver nothing until released.
    Hold { flags: Vec<String> },
}

impl Verdict {
    /// A refusal.
    pub fn reject(code: u16, reason: impl Into<String>) -> Verdict {
        Verdict::Reject { code, reason: reason.into() }
    }

    /// A hold with these flags.
    pub fn hold<I, S>(flags: I) -> Verdict
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Verdict::Hold { flags: flags.into_iter().map(Into::into).collect() }
    }

    /// A rewrite of the content, keeping no head.
    pub fn rewrite(content: impl Into<Value>) -> Verdict {
        Verdict::Rewrite { content: content.into(), head: None }
    }

    pub(crate) fn into_wit(self) -> wit::Verdict {
        match self {
            Verdict::Allow => wit::Verdict::Allow,
            Verdict::Reject { code, reason } => wit::Verdict::Reject(wit::Rejection { code, reason }),
            Verdict::Rewrite { content, head } => wit::Verdict::Rewrite(wit::Rewrite {
                content: content.to_string(),
                head: head.map(|h| Value::Object(h).to_string()),
            }),
            Verdict::Hold { flags } => wit::Verdict::Hold(flags),
        }
    }
}

/// A business command.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// Such as `friend.request.create`.
    pub name: String,
    /// The host's input: `{"args": …, "facts": …}` for the business commands of the commands table.
    pub args: Value,
}

impl Command {
    /// The command in the commands table, if it is one (a plugin's own commands are not).
    pub fn id(&self) -> Option<CommandName> {
        CommandName::parse(&self.name)
    }

    /// The typed facts the host sent for a command of the table. A command outside the table, or facts that
    /// are missing, mistyped or carry an unknown field, are an error: answer it with [`CommandOutcome::bad_facts`],
    /// never with a default that might allow what the rules forbid.
    pub fn facts(&self) -> Result<Facts, FactsError> {
        let Some(id) = self.id() else {
            return Err(FactsError { command: None, why: format!("{} is not in the commands table", self.name) });
        };
        Facts::parse(id, self.args.get("facts").unwrap_or(&Value::Null))
            .map_err(|e| FactsError { command: Some(id), why: e.why })
    }

    /// [`Command::facts`] for a plugin that decides one family: a command of another family is an error too.
    /// Prefer it: only that family's fact types are compiled into the component (smaller, faster to
    /// instantiate, which the per-call deadline includes).
    #[inline(always)]
    pub fn facts_in(&self, family: Family) -> Result<Facts, FactsError> {
        let Some(id) = self.id() else {
            return Err(FactsError { command: None, why: format!("{} is not in the commands table", self.name) });
        };
        Facts::parse_in(family, id, self.args.get("facts").unwrap_or(&Value::Null))
            .map_err(|e| FactsError { command: Some(id), why: e.why })
    }
}

/// Why [`Command::facts`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsError {
    /// The command, if it is in the table.
    pub command: Option<CommandName>,
    pub why: String,
}

impl fmt::Display for FactsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.command {
            Some(c) => write!(f, "facts of {c}: {}", self.why),
            None => f.write_str(&self.why),
        }
    }
}

impl std::error::Error for FactsError {}

/// What a command gives.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    /// Done, with a JSON result.
    Ok(Value),
    /// Refused with a ctrl code (400–599), a stable reason code and a message.
    Rejected { code: u16, reason_code: String, message: String },
}

impl CommandOutcome {
    /// Done.
    pub fn ok(result: impl Into<Value>) -> CommandOutcome {
        CommandOutcome::Ok(result.into())
    }

    /// Refused with a reason of the table, which fixes the ctrl code and HTTP status.
    pub fn reject(reason: Reason, message: impl Into<String>) -> CommandOutcome {
        CommandOutcome::Rejected {
            code: reason.status(),
            reason_code: reason.name().to_owned(),
            message: message.into(),
        }
    }

    /// Refused with a reason of the plugin's own, for its own commands that no `/v1/im` route reaches. A
    /// business command refused this way reaches clients as `RULE_REFUSED` (the table's), this name in the text.
    pub fn reject_other(code: u16, reason_code: impl Into<String>, message: impl Into<String>) -> CommandOutcome {
        CommandOutcome::Rejected { code, reason_code: reason_code.into(), message: message.into() }
    }

    /// The refusal for facts the plugin cannot read (`FACTS_INVALID`, a 500 that fails the command closed).
    pub fn bad_facts(e: &FactsError) -> CommandOutcome {
        CommandOutcome::reject(Reason::FactsInvalid, e.to_string())
    }

    /// The stable reason code of a refusal; `None` when the command was done.
    pub fn reason_code(&self) -> Option<&str> {
        match self {
            CommandOutcome::Rejected { reason_code, .. } => Some(reason_code),
            CommandOutcome::Ok(_) => None,
        }
    }

    pub(crate) fn into_wit(self) -> wit::CommandOutcome {
        match self {
            CommandOutcome::Ok(v) => wit::CommandOutcome::Ok(v.to_string()),
            CommandOutcome::Rejected { code, reason_code, message } => {
                wit::CommandOutcome::Rejected(wit::CommandRejection { code, reason_code, message })
            }
        }
    }
}

/// Why a host call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// A malformed argument.
    Invalid(String),
    /// A per-call limit was reached.
    Limit(String),
    /// The backing service is unreachable.
    Unavailable(String),
    /// A stored value or the settings did not decode as expected.
    Decode(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Invalid(m) => write!(f, "invalid: {m}"),
            HostError::Limit(m) => write!(f, "limit: {m}"),
            HostError::Unavailable(m) => write!(f, "unavailable: {m}"),
            HostError::Decode(m) => write!(f, "decode: {m}"),
        }
    }
}

impl std::error::Error for HostError {}

impl From<wit::HostError> for HostError {
    fn from(e: wit::HostError) -> Self {
        match e {
            wit::HostError::Invalid(m) => HostError::Invalid(m),
            wit::HostError::Limit(m) => HostError::Limit(m),
            wit::HostError::Unavailable(m) => HostError::Unavailable(m),
        }
    }
}

/// Log severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A user from the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: String,
    pub active: bool,
    pub public: Option<Value>,
    pub tags: Vec<String>,
    pub created_ms: u64,
}

/// A topic from the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub name: String,
    pub kind: TopicKind,
    pub owner: Option<String>,
    pub public: Option<Value>,
    pub tags: Vec<String>,
    pub created_ms: u64,
    pub seq: i64,
}

/// A membership from the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub topic: String,
    pub user: String,
    /// Tinode access-mode letters, e.g. `JRWPS`.
    pub mode: String,
    pub joined_ms: u64,
}

/// A system notification to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub user: String,
    pub kind: String,
    pub title: String,
    pub payload: Value,
}
