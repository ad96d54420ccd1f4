//! Running one admin command exactly once per `command_id`: claim the ledger row, run the effect, and make the
//! row final with the result record in one write (which also puts the record in the outbox). The consumer and
//! the HTTP front both come through [`Service::execute_admin_command`].

use super::{AdminCommand, CommandResult, effects};
use crate::Service;
use crate::business::BizError;
use palaver_api::Reason;
use palaver_core::TenantId;
use palaver_core::ports::{AuditEvent, Claim, CommandEnd, CommandStatus};
use std::time::Duration;

/// How long a claim protects a running command from other nodes; after it, a claim older than this is taken
/// to belong to a dead node and is taken over. Longer than any effect takes.
pub const CLAIM_LEASE: Duration = Duration::from_secs(60);

/// What running a command came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// This call ran the command (or rejected it) and stored this result.
    Ran(CommandResult),
    /// The command was final already: its stored result, to be republished; nothing else happened.
    Repeat(CommandResult),
    /// A transient failure (storage down): nothing is final, try again later.
    Retry(String),
    /// Another node holds the claim and is running the command (its lease has not ended): wait for it, without
    /// counting a failure; once it finishes a retry finds the result, and if it died the lease hands it over.
    Busy(String),
}

impl Service {
    /// Runs `cmd` in `tenant` at most once per `command_id`: a first delivery claims the ledger row and runs the
    /// effect, a repeat answers the stored result and does nothing else, and a failure that a retry may cure
    /// (503) gives the claim up so that the next attempt, here or on another node, runs it.
    pub async fn execute_admin_command(&self, tenant: TenantId, cmd: &AdminCommand) -> Outcome {
        let outcome = self.run_admin_command(tenant, cmd).await;
        let label = match &outcome {
            Outcome::Ran(r) => match r.status() {
                CommandStatus::Succeeded => "succeeded",
                CommandStatus::Rejected => "rejected",
                _ => "failed",
            },
            Outcome::Repeat(_) => "repeat",
            Outcome::Retry(_) | Outcome::Busy(_) => "retry",
        };
        self.inner.metrics.admin_command(label);
        outcome
    }

    async fn run_admin_command(&self, tenant: TenantId, cmd: &AdminCommand) -> Outcome {
        let node = self.inner.cfg.node_id.clone();
        let ledger = &self.inner.ports.business.commands;
        let now = crate::now_millis();
        let lease = CLAIM_LEASE.as_millis() as i64;
        match ledger.claim(tenant, &cmd.command_id, &cmd.kind, &node, now, lease).await {
            Ok(Claim::Run { .. }) => {}
            Ok(Claim::Done(row)) => return Outcome::Repeat(stored(cmd, tenant, &node, row.status, row.result)),
            Ok(Claim::Busy { node }) => return Outcome::Busy(node),
            Err(e) => return Outcome::Retry(format!("the command ledger: {e}")),
        }
        let result = match effects::run(self, tenant, cmd).await {
            Ok(detail) => {
                CommandResult::new(cmd, Some(tenant), (CommandStatus::Succeeded, None), "done", &node, detail)
            }
            Err(e) if e.status() == 503 || e.status() == 429 => {
                if let Err(release) = ledger.release(tenant, &cmd.command_id, &node, crate::now_millis()).await {
                    tracing::debug!(error = %release, "claim not released; its lease will end it");
                }
                return Outcome::Retry(e.message);
            }
            Err(e) => from_error(cmd, tenant, &node, e),
        };
        self.finish_admin_command(tenant, cmd, result).await
    }

    /// Makes `cmd` final with `result` (the ledger row and the outbox record in one write). A command another
    /// call finished meanwhile answers that call's stored result instead.
    pub async fn finish_admin_command(&self, tenant: TenantId, cmd: &AdminCommand, result: CommandResult) -> Outcome {
        let ledger = &self.inner.ports.business.commands;
        let json = serde_json::to_value(&result).unwrap_or_default();
        // The audit event of every admin command travels with its result, in the ledger's one write.
        let actor_id = cmd.actor.id.parse::<i64>().ok();
        let actor_kind = if cmd.actor.kind.is_empty() { "admin" } else { cmd.actor.kind.as_str() };
        let event = AuditEvent::new(
            crate::backbone::new_event_id(),
            tenant,
            &format!("admin.{}", cmd.kind),
            (actor_kind, actor_id),
            ("command", cmd.command_id.clone()),
            crate::now_millis(),
        )
        .with_detail(serde_json::json!({ "status": result.status, "reason": result.reason, "actor": cmd.actor.id,
            "request_id": cmd.request_id, "payload": redacted(&cmd.payload) }));
        let records = [result.record(), crate::backbone::audit_record(&event)];
        let now = crate::now_millis();
        let end = CommandEnd { kind: &cmd.kind, status: result.status(), result: &json, records: &records, now };
        match ledger.finish(tenant, &cmd.command_id, &end).await {
            Ok(true) => {
                self.inner.backbone.written.notify_one();
                tracing::info!(command_id = %cmd.command_id, kind = %cmd.kind, tenant = tenant.0,
                    status = %result.status, reason = %result.reason, actor = %cmd.actor.id, "admin command");
                Outcome::Ran(result)
            }
            Ok(false) => match ledger.get_command(tenant, &cmd.command_id).await {
                Ok(Some(row)) => Outcome::Repeat(stored(cmd, tenant, &self.inner.cfg.node_id, row.status, row.result)),
                Ok(None) => Outcome::Retry("the command row vanished".into()),
                Err(e) => Outcome::Retry(format!("the command ledger: {e}")),
            },
            Err(e) => Outcome::Retry(format!("the command ledger: {e}")),
        }
    }
}

/// The payload as the audit log keeps it: a reset password is never stored.
fn redacted(payload: &serde_json::Value) -> serde_json::Value {
    let mut p = payload.clone();
    if let Some(pw) = p.get_mut("password") {
        *pw = serde_json::json!("<redacted>");
    }
    p
}

/// The result a final row holds (or a stand-in if the row lost it, which no adapter does).
fn stored(
    cmd: &AdminCommand,
    tenant: TenantId,
    node: &str,
    status: CommandStatus,
    result: Option<serde_json::Value>,
) -> CommandResult {
    result.and_then(|r| serde_json::from_value(r).ok()).unwrap_or_else(|| {
        CommandResult::new(
            cmd,
            Some(tenant),
            (status, Some(Reason::ResultLost)),
            "the stored result is unreadable",
            node,
            serde_json::json!({}),
        )
    })
}

/// A refusal (4xx) is `rejected`, anything else `failed`.
fn from_error(cmd: &AdminCommand, tenant: TenantId, node: &str, e: BizError) -> CommandResult {
    let status = if e.status() < 500 { CommandStatus::Rejected } else { CommandStatus::Failed };
    CommandResult::new(cmd, Some(tenant), (status, Some(e.reason)), e.message, node, serde_json::json!({}))
}

impl Service {
    /// The stored result of a command, `None` while it is unknown or not final (`GET …/commands/{id}`).
    pub async fn admin_command_result(
        &self,
        tenant: TenantId,
        command_id: &str,
    ) -> Result<Option<serde_json::Value>, BizError> {
        let row = self.inner.ports.business.commands.get_command(tenant, command_id).await?;
        Ok(row.filter(|r| r.status.is_final()).and_then(|r| r.result))
    }
}
