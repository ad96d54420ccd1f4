//! The admin command ledger: one row per `command_id` in the tenant's `admin_commands` table, so that a command
//! has exactly one effect however often it is delivered, on however many nodes, across restarts.
//!
//! A consumer claims the row before the effect ([`CommandStore::claim`]); only the claimer runs it, and it then
//! writes the final status with the result ([`CommandStore::finish`]), in the same transaction as the result's
//! outbox record where the adapter has an outbox. A delivery that finds the row final republishes the stored
//! result and does nothing else.

use crate::ports::QueueRecord;
use crate::{StoreResult, TenantId, UnixMillis};
use serde_json::Value;

/// Where a command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandStatus {
    /// Claimed by a node and not finished (its effect may or may not have happened).
    Running,
    /// Given up by its claimer after a transient failure; the next claim takes it.
    Released,
    Succeeded,
    Failed,
    Rejected,
}

impl CommandStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandStatus::Running => "running",
            CommandStatus::Released => "released",
            CommandStatus::Succeeded => "succeeded",
            CommandStatus::Failed => "failed",
            CommandStatus::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<CommandStatus> {
        [
            CommandStatus::Running,
            CommandStatus::Released,
            CommandStatus::Succeeded,
            CommandStatus::Failed,
            CommandStatus::Rejected,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    /// True once the command has its result: no claim runs it again.
    pub fn is_final(self) -> bool {
        matches!(self, CommandStatus::Succeeded | CommandStatus::Failed | CommandStatus::Rejected)
    }
}

/// One command's row.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    pub command_id: String,
    /// The command's type (`user.disable`, …).
    pub kind: String,
    pub status: CommandStatus,
    /// The result record's JSON, once final.
    pub result: Option<Value>,
    /// How many claims ran (or began to run) it.
    pub attempts: u32,
    /// The node holding (or that last held) the claim.
    pub node: String,
    pub created: UnixMillis,
    pub updated: UnixMillis,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The caller holds the command now and runs it; `attempt` counts this claim (1 for the first).
    Run { attempt: u32 },
    /// The command is final: here is its row, with the result to republish.
    Done(CommandRecord),
    /// Another node holds a claim that has not expired: it is running the command.
    Busy { node: String },
}

/// How a command ends, for [`CommandStore::finish`].
#[derive(Debug, Clone, Copy)]
pub struct CommandEnd<'a> {
    /// The command's type, stored if the row did not exist.
    pub kind: &'a str,
    /// A final status.
    pub status: CommandStatus,
    pub result: &'a Value,
    /// Appended to the tenant's outbox in the same transaction (the result record, the audit event).
    pub records: &'a [QueueRecord],
    pub now: UnixMillis,
}

/// Each tenant's admin commands.
#[async_trait::async_trait]
pub trait CommandStore: Send + Sync {
    /// Claims `command_id` for `node` at `now`, atomically: a new id is inserted as `Running`; a `Released` row,
    /// a row `Running` on this same node (a retry or a restart), or one whose claim is older than `lease_ms` (its
    /// node died) is taken over, and its attempts rise by one; a final row is `Done`; any other running claim is
    /// `Busy`. Two racing claims of one id never both get `Run`.
    async fn claim(
        &self,
        tenant: TenantId,
        command_id: &str,
        kind: &str,
        node: &str,
        now: UnixMillis,
        lease_ms: i64,
    ) -> StoreResult<Claim>;

    /// Gives up `node`'s claim after a transient failure, so that the next claim (here or on another node) runs
    /// the command at once. Does nothing if the row is final or held by another node.
    async fn release(&self, tenant: TenantId, command_id: &str, node: &str, now: UnixMillis) -> StoreResult<()>;

    /// Makes the command final with `end.status` and `end.result`, and appends `end.records` (the result record, the audit event)
    /// to the tenant's outbox in the same transaction. True if this call made it final; false (and nothing is
    /// written) if it was final already, so a result is stored and published once. A row that was never claimed
    /// is inserted final (a command rejected before its claim).
    async fn finish(&self, tenant: TenantId, command_id: &str, end: &CommandEnd<'_>) -> StoreResult<bool>;

    /// The command's row, if any.
    async fn get_command(&self, tenant: TenantId, command_id: &str) -> StoreResult<Option<CommandRecord>>;
}
