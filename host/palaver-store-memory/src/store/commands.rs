//! The admin command ledger of the in-memory store: each tenant's rows by command id, decided under the store's
//! one lock, so two racing claims never both run a command. The outbox append follows the final write under no
//! common lock; nothing in process can crash between them.

use super::MemoryStore;
use async_trait::async_trait;
use palaver_core::ports::{Claim, CommandEnd, CommandRecord, CommandStatus, CommandStore, OutboxStore};
use palaver_core::{StoreResult, TenantId, UnixMillis};

#[async_trait]
impl CommandStore for MemoryStore {
    async fn claim(
        &self,
        tenant: TenantId,
        command_id: &str,
        kind: &str,
        node: &str,
        now: UnixMillis,
        lease_ms: i64,
    ) -> StoreResult<Claim> {
        Ok(self.with_tenant(tenant, |t| {
            let row = t.commands.entry(command_id.to_owned()).or_insert_with(|| CommandRecord {
                command_id: command_id.to_owned(),
                kind: kind.to_owned(),
                status: CommandStatus::Released,
                result: None,
                attempts: 0,
                node: node.to_owned(),
                created: now,
                updated: now,
            });
            if row.status.is_final() {
                return Claim::Done(row.clone());
            }
            let ours = row.status == CommandStatus::Released || row.node == node || now - row.updated >= lease_ms;
            if !ours {
                return Claim::Busy { node: row.node.clone() };
            }
            row.status = CommandStatus::Running;
            row.node = node.to_owned();
            row.attempts += 1;
            row.updated = now;
            Claim::Run { attempt: row.attempts }
        }))
    }

    async fn release(&self, tenant: TenantId, command_id: &str, node: &str, now: UnixMillis) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            if let Some(row) = t.commands.get_mut(command_id)
                && row.status == CommandStatus::Running
                && row.node == node
            {
                row.status = CommandStatus::Released;
                row.updated = now;
            }
        });
        Ok(())
    }

    async fn finish(&self, tenant: TenantId, command_id: &str, end: &CommandEnd<'_>) -> StoreResult<bool> {
        let CommandEnd { kind, status, result, records, now } = *end;
        let made_final = self.with_tenant(tenant, |t| {
            let row = t.commands.entry(command_id.to_owned()).or_insert_with(|| CommandRecord {
                command_id: command_id.to_owned(),
                kind: kind.to_owned(),
                status: CommandStatus::Released,
                result: None,
                attempts: 0,
                node: String::new(),
                created: now,
                updated: now,
            });
            if row.status.is_final() {
                return false;
            }
            row.status = status;
            row.result = Some(result.clone());
            row.updated = now;
            true
        });
        if made_final && !records.is_empty() {
            self.outbox.put(tenant, records).await?;
        }
        Ok(made_final)
    }

    async fn get_command(&self, tenant: TenantId, command_id: &str) -> StoreResult<Option<CommandRecord>> {
        Ok(self.with_tenant(tenant, |t| t.commands.get(command_id).cloned()))
    }
}
