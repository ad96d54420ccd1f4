//! The admin command ledger over SQLite (`admin_commands`, migration 0007), and the outbox rows the final write
//! appends in the same transaction (`outbox`, migration 0005).
//!
//! A claim and a finish each run in one `BEGIN IMMEDIATE` transaction on the single writer: what they read (the
//! row's status, node and time) is still true when they write, so two racing claims of one id never both run it
//! and a result is made final, and put in the outbox, exactly once.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{Claim, CommandEnd, CommandRecord, CommandStatus, CommandStore};
use palaver_core::{StoreResult, TenantId, UnixMillis};
use palaver_store_sql::ledger::{CommandColumns, command_of};
use sqlx::{Sqlite, Transaction};

type Row = CommandColumns;

/// The columns of a [`Row`], as a literal for `concat!`.
macro_rules! columns {
    () => {
        "command_id, type, status, result, attempts, node, created_at, updated_at"
    };
}

/// One command's row by id.
const SELECT: &str = concat!("SELECT ", columns!(), " FROM admin_commands WHERE tenant_id = ? AND command_id = ?");

async fn row_in(tx: &mut Transaction<'static, Sqlite>, t: i64, id: &str) -> StoreResult<Option<CommandRecord>> {
    let row: Option<Row> = sqlx::query_as(SELECT).bind(t).bind(id).fetch_optional(&mut **tx).await.map_err(db_error)?;
    Ok(row.map(command_of).transpose()?)
}

#[async_trait::async_trait]
impl CommandStore for SqliteStore {
    async fn claim(
        &self,
        tenant_id: TenantId,
        command_id: &str,
        kind: &str,
        node: &str,
        now: UnixMillis,
        lease_ms: i64,
    ) -> StoreResult<Claim> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let claim = match row_in(&mut tx, t, command_id).await? {
            Some(row) if row.status.is_final() => Claim::Done(row),
            Some(row) if row.status == CommandStatus::Running && row.node != node && now - row.updated < lease_ms => {
                Claim::Busy { node: row.node }
            }
            Some(row) => {
                sqlx::query(
                    "UPDATE admin_commands SET status = 'running', node = ?, attempts = attempts + 1, updated_at = ? \
                     WHERE tenant_id = ? AND command_id = ?",
                )
                .bind(node)
                .bind(now)
                .bind(t)
                .bind(command_id)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
                Claim::Run { attempt: row.attempts + 1 }
            }
            None => {
                sqlx::query(
                    "INSERT INTO admin_commands (tenant_id, command_id, type, status, result, attempts, node, \
                     created_at, updated_at) VALUES (?, ?, ?, 'running', NULL, 1, ?, ?, ?)",
                )
                .bind(t)
                .bind(command_id)
                .bind(kind)
                .bind(node)
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
                Claim::Run { attempt: 1 }
            }
        };
        tx.commit().await.map_err(db_error)?;
        Ok(claim)
    }

    async fn release(&self, tenant_id: TenantId, command_id: &str, node: &str, now: UnixMillis) -> StoreResult<()> {
        sqlx::query(
            "UPDATE admin_commands SET status = 'released', updated_at = ? \
             WHERE tenant_id = ? AND command_id = ? AND status = 'running' AND node = ?",
        )
        .bind(now)
        .bind(tenant(tenant_id))
        .bind(command_id)
        .bind(node)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn finish(&self, tenant_id: TenantId, command_id: &str, end: &CommandEnd<'_>) -> StoreResult<bool> {
        let CommandEnd { kind, status, result, records, now } = *end;
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let existing = row_in(&mut tx, t, command_id).await?;
        if existing.as_ref().is_some_and(|r| r.status.is_final()) {
            return Ok(false);
        }
        // One statement for both cases: a claimed row gets its result, an unclaimed one (rejected before any
        // claim) is inserted final.
        sqlx::query(
            "INSERT INTO admin_commands (tenant_id, command_id, type, status, result, attempts, node, created_at, \
             updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 0, '', ?6, ?6) ON CONFLICT (tenant_id, command_id) DO UPDATE \
             SET status = excluded.status, result = excluded.result, updated_at = excluded.updated_at",
        )
        .bind(t)
        .bind(command_id)
        .bind(kind)
        .bind(status.as_str())
        .bind(result.to_string())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        crate::outbox::append(&mut tx, t, records, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    async fn get_command(&self, tenant_id: TenantId, command_id: &str) -> StoreResult<Option<CommandRecord>> {
        let row: Option<Row> = sqlx::query_as(SELECT)
            .bind(tenant(tenant_id))
            .bind(command_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(command_of).transpose()?)
    }
}
