//! The business rules port: before the host changes relations or governance state, it asks whoever holds the
//! tenant's rules (the friends and governance plugins) whether the change may happen.
//!
//! The host gathers the facts a rule needs (the two users' relation, the actor's role, today's request count)
//! and passes them with the command's arguments; the rules answer allow, with parameters the host applies
//! atomically (such as the maximum number of admins), or refuse with a code and a stable reason. Keeping the
//! writes in the host and the decisions in the plugin is what lets a team change a rule by hot-reloading a
//! component while the store stays race-free.

use crate::{TenantId, UserId};
use serde_json::Value;

/// What the rules said about one command.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleVerdict {
    /// Go ahead. The value carries the parameters the rule fixes (such as `{"max_admins": 3}`); `Null` if none.
    Allow(Value),
    /// Do not. `status` is the Tinode ctrl code (400–599), `reason` a stable upper-case code such as
    /// `FRIEND_REQUEST_LIMIT`, `message` a sentence for people.
    Refuse { status: u16, reason: String, message: String },
    /// Nobody holds rules for this command in this tenant (no plugin handles it, or it is disabled there), so
    /// the feature is off.
    NoRules,
}

/// Decides business commands.
#[async_trait::async_trait]
pub trait BusinessRules: Send + Sync {
    /// Whether anyone holds rules for `command` in `tenant`: a lookup, no decision, asked before the host
    /// gathers facts so that a command that is off says so whatever its arguments.
    fn available(&self, tenant: TenantId, command: &str) -> bool;

    /// Decides `command` by `actor`; `input` is the JSON text `{"args": …, "facts": …}`, written once by the
    /// host (a plugin receives it as it is, so no adapter serialises it again).
    async fn decide(&self, tenant: TenantId, actor: UserId, command: &str, input: &str) -> RuleVerdict;

    /// Whether plugin `plugin` offers `command` to clients, and whether it runs for `tenant`: a lookup, no call.
    fn client_command(&self, _tenant: TenantId, _plugin: &str, _command: &str) -> ClientCommandState {
        ClientCommandState::Unknown
    }

    /// Runs a command a plugin offers to clients, with the client's own arguments (no host facts: the
    /// plugin must treat `args` as untrusted input). `NoRules` if the command is gone or off by now.
    async fn run_client_command(
        &self,
        _tenant: TenantId,
        _actor: UserId,
        _plugin: &str,
        _command: &str,
        _args: &Value,
    ) -> RuleVerdict {
        RuleVerdict::NoRules
    }

    /// Every command the loaded plugins offer to clients, for the API's OpenAPI document.
    fn client_commands(&self) -> Vec<ClientCommandDoc> {
        Vec::new()
    }
}

/// Whether a client may run a plugin's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCommandState {
    /// No loaded plugin of that name offers a command of that name to clients.
    Unknown,
    /// The plugin offers it, but is not enabled for the tenant.
    Off,
    /// It runs.
    On,
}

/// A command a plugin offers to clients (`POST /v1/im/plugins/{plugin}/commands/{command}`), as its manifest
/// describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCommandDoc {
    pub plugin: String,
    pub command: String,
    /// One sentence for the API's reader.
    pub summary: String,
    /// JSON Schema of the request body, if the manifest gives one (documentation: the plugin checks its input).
    pub args: Option<Value>,
    /// JSON Schema of the result, if the manifest gives one.
    pub result: Option<Value>,
}

/// No rules at all: every business command is off.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRules;

#[async_trait::async_trait]
impl BusinessRules for NoRules {
    fn available(&self, _: TenantId, _: &str) -> bool {
        false
    }

    async fn decide(&self, _: TenantId, _: UserId, _: &str, _: &str) -> RuleVerdict {
        RuleVerdict::NoRules
    }
}
