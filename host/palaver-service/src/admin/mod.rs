//! Admin commands from the Admin side (`im.admin.command`): the command and its result record, how a command is
//! parsed, run exactly once per `command_id` (`run.rs`), what each type does (`effects.rs`), and the consumer
//! that reads them off the task queue (`consumer.rs`). The HTTP admin actions are a second front for the same
//! commands: they build the same [`AdminCommand`] and call [`Service::execute_admin_command`].
//!
//! [`Service::execute_admin_command`]: crate::Service::execute_admin_command

mod consumer;
mod effects;
mod run;

pub use consumer::{AdminConsumer, ConsumerConfig, TenantDirectory};
pub(crate) use effects::report_created_event;
pub use run::{CLAIM_LEASE, Outcome};

use palaver_api::Reason;
use palaver_core::ports::{CommandStatus, QueueRecord, QueueTopic};
use palaver_core::{TenantId, UnixMillis};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Every command type, as the Admin side names it.
pub const COMMAND_TYPES: &[&str] = &[
    "user.disable",
    "user.enable",
    "user.password.reset",
    "user.device.revoke",
    "user.delete",
    "group.delete",
    "group.member.remove",
    "group.admin.set",
    "group.admin.remove",
    "group.member.mute",
    "message.moderate",
    "file.audit.update",
    "abuse.report.resolve",
];

/// Longest accepted `command_id`, in bytes (the ledger's key column).
pub const MAX_COMMAND_ID: usize = 128;

/// Who issued a command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub id: String,
}

/// A command as the Admin side sends it. Either `tenant_id` (a decimal string) or `tenant_code` names the tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdminCommand {
    pub command_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_code: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub actor: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<Value>,
    #[serde(default)]
    pub payload: Value,
}

impl AdminCommand {
    /// The queue key: tenant and target, so that commands about one target stay in order.
    pub fn key(&self) -> String {
        let tenant = self.tenant_id.clone().or_else(|| self.tenant_code.clone()).unwrap_or_default();
        let p = &self.payload;
        let target = ["topic", "user", "report", "file"]
            .iter()
            .find_map(|k| p.get(*k).and_then(Value::as_str).map(str::to_owned))
            .or_else(|| p.get("report").and_then(Value::as_i64).map(|r| r.to_string()))
            .unwrap_or_default();
        format!("{tenant}:{target}")
    }

    /// A fresh command id, for a front that was given none (the HTTP admin API without `Idempotency-Key`).
    pub fn new_id(prefix: &str) -> String {
        format!("{prefix}-{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>())
    }

    /// The command as a queue record on `im.admin.command`.
    pub fn record(&self) -> QueueRecord {
        let payload = serde_json::to_vec(self).unwrap_or_default();
        QueueRecord::new(QueueTopic::AdminCommand, self.key(), payload)
    }
}

/// The result record on `im.admin.command.result`, also the HTTP front's response body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommandResult {
    pub command_id: String,
    /// The tenant as a decimal string, `""` when it could not be resolved.
    pub tenant_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// `succeeded`, `failed` or `rejected`.
    pub status: String,
    /// An HTTP-style status: 200, a 4xx for a rejection, a 5xx for a failure.
    pub code: u16,
    /// `OK`, or a stable reason's name (`palaver_api::Reason`; kept as a string so that a stored result stays
    /// readable whatever the table becomes).
    pub reason: String,
    pub message: String,
    pub node: String,
    /// RFC 3339, UTC.
    pub finished_at: String,
    #[serde(default)]
    pub detail: Value,
}

impl CommandResult {
    /// A result of `cmd` with `status` and the reason of a refusal or failure (`None`: 200 `OK`); `code` is the
    /// reason's HTTP status.
    pub(crate) fn new(
        cmd: &AdminCommand,
        tenant: Option<TenantId>,
        (status, reason): (CommandStatus, Option<Reason>),
        message: impl Into<String>,
        node: &str,
        detail: Value,
    ) -> CommandResult {
        CommandResult {
            command_id: cmd.command_id.clone(),
            tenant_id: tenant.map(|t| t.0.to_string()).unwrap_or_default(),
            kind: cmd.kind.clone(),
            status: status.as_str().to_owned(),
            code: reason.map_or(200, Reason::status),
            reason: reason.map_or("OK", Reason::name).to_owned(),
            message: message.into(),
            node: node.to_owned(),
            finished_at: rfc3339(crate::now_millis()),
            detail,
        }
    }

    /// A rejection: the command is wrong and retrying it cannot help.
    pub(crate) fn rejected(
        cmd: &AdminCommand,
        tenant: Option<TenantId>,
        reason: Reason,
        message: String,
        node: &str,
    ) -> Self {
        CommandResult::new(cmd, tenant, (CommandStatus::Rejected, Some(reason)), message, node, json!({}))
    }

    /// The stored status.
    pub fn status(&self) -> CommandStatus {
        CommandStatus::parse(&self.status).unwrap_or(CommandStatus::Failed)
    }

    /// The result as a record on `im.admin.command.result`, keyed like its command.
    pub fn record(&self) -> QueueRecord {
        let payload = serde_json::to_vec(self).unwrap_or_default();
        let mut r =
            QueueRecord::new(QueueTopic::AdminResult, format!("{}:{}", self.tenant_id, self.command_id), payload);
        r.headers.push(("command_id".into(), self.command_id.clone()));
        r
    }
}

/// What reading a record's bytes as a command gave.
#[derive(Debug)]
pub enum Parsed {
    /// A well-formed command.
    Command(AdminCommand),
    /// A command with a readable id that is wrong in another way: it gets a `rejected` result.
    Invalid { command: AdminCommand, reason: Reason, message: String },
    /// Not even a `command_id` could be read: it goes to the dead-letter topic.
    Unreadable(String),
}

/// Reads a command as the Admin side sends it.
pub fn parse(bytes: &[u8]) -> Parsed {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Parsed::Unreadable(format!("not JSON: {e}")),
    };
    let id = match value.get("command_id").and_then(Value::as_str).map(str::trim) {
        Some(id) if !id.is_empty() && id.len() <= MAX_COMMAND_ID => id.to_owned(),
        Some(id) if !id.is_empty() => return Parsed::Unreadable(format!("command_id is over {MAX_COMMAND_ID} bytes")),
        _ => return Parsed::Unreadable("no command_id string".into()),
    };
    let bare = |value: &Value| AdminCommand {
        command_id: id.clone(),
        kind: value.get("type").and_then(Value::as_str).unwrap_or_default().to_owned(),
        tenant_id: value.get("tenant_id").and_then(Value::as_str).map(str::to_owned),
        tenant_code: value.get("tenant_code").and_then(Value::as_str).map(str::to_owned),
        ..AdminCommand::default()
    };
    let cmd: AdminCommand = match serde_json::from_value(value.clone()) {
        Ok(c) => c,
        Err(e) => {
            let message = format!("the command does not parse: {e}");
            return Parsed::Invalid { command: bare(&value), reason: Reason::MalformedCommand, message };
        }
    };
    if !COMMAND_TYPES.contains(&cmd.kind.as_str()) {
        let message = format!("unknown command type {:?}", cmd.kind);
        return Parsed::Invalid { command: cmd, reason: Reason::UnknownType, message };
    }
    if !cmd.payload.is_object() {
        return Parsed::Invalid {
            command: cmd,
            reason: Reason::MalformedCommand,
            message: "payload must be an object".into(),
        };
    }
    if cmd.tenant_id.is_none() && cmd.tenant_code.is_none() {
        let message = "tenant_id or tenant_code is required".to_owned();
        return Parsed::Invalid { command: cmd, reason: Reason::UnknownTenant, message };
    }
    Parsed::Command(cmd)
}

/// A time as the result records show it: RFC 3339 in UTC, milliseconds.
pub fn rfc3339(ms: UnixMillis) -> String {
    serde_json::to_value(palaver_proto::Timestamp(ms))
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_reject_or_go_to_the_dead_letters() {
        let ok = br#"{"command_id":"c1","tenant_id":"1","type":"user.disable","actor":{"type":"admin","id":"7"},
            "payload":{"user":"usrAAAAAAAAAAA"}}"#;
        match parse(ok) {
            Parsed::Command(c) => {
                assert_eq!((c.command_id.as_str(), c.kind.as_str()), ("c1", "user.disable"));
                assert_eq!(c.key(), "1:usrAAAAAAAAAAA");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse(b"{not json"), Parsed::Unreadable(_)));
        assert!(matches!(parse(br#"{"type":"user.disable"}"#), Parsed::Unreadable(_)));
        assert!(matches!(parse(br#"{"command_id":7}"#), Parsed::Unreadable(_)));
        let unknown = br#"{"command_id":"c2","tenant_id":"1","type":"user.explode","payload":{}}"#;
        assert!(matches!(parse(unknown), Parsed::Invalid { reason: Reason::UnknownType, .. }));
        let no_tenant = br#"{"command_id":"c3","type":"user.enable","payload":{}}"#;
        assert!(matches!(parse(no_tenant), Parsed::Invalid { reason: Reason::UnknownTenant, .. }));
        let bad_shape = br#"{"command_id":"c4","tenant_id":1,"type":"user.enable","payload":{}}"#;
        assert!(matches!(parse(bad_shape), Parsed::Invalid { reason: Reason::MalformedCommand, .. }));
    }
}
