//! The admin command ledger over a tenant database (`admin_commands`, tenant migration 0007), and the outbox
//! rows the final write appends in the same transaction (`outbox`, tenant migration 0005).
//!
//! A claim first tries `INSERT IGNORE` of a running row (the first delivery of an id wins it in one statement);
//! otherwise it reads the row `FOR UPDATE`, so a racing claim waits and then sees the first one's write, and
//! decides from what it read. A finish reads the row `FOR UPDATE` too and writes the result and its outbox rows
//! in that transaction, so a result is made final, and put in the outbox, exactly once.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, millis_to_datetime};
use crate::error::db_error;
use palaver_core::ports::{Claim, CommandEnd, CommandRecord, CommandStatus, CommandStore};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis};
use palaver_store_sql::ledger::{CommandColumns, command_of};
use sqlx::{MySql, Transaction};

type Row = CommandColumns;

/// The select list of a [`Row`], as a literal for `concat!`.
macro_rules! select {
    () => {
        concat!(
            "SELECT command_id, type, status, CAST(result AS CHAR), attempts, node, ",
            datetime_to_millis!("created_at"),
            ", ",
            datetime_to_millis!("updated_at"),
            " FROM admin_commands WHERE command_id = ?"
        )
    };
}

async fn locked_row(tx: &mut Transaction<'static, MySql>, id: &str) -> StoreResult<Option<CommandRecord>> {
    let row: Option<Row> =
        sqlx::query_as(concat!(select!(), " FOR UPDATE")).bind(id).fetch_optional(&mut **tx).await.map_err(db_error)?;
    Ok(row.map(command_of).transpose()?)
}

#[async_trait::async_trait]
impl CommandStore for MysqlStore {
    async fn claim(
        &self,
        tenant: TenantId,
        command_id: &str,
        kind: &str,
        node: &str,
        now: UnixMillis,
        lease_ms: i64,
    ) -> StoreResult<Claim> {
        let db = self.db(tenant).await?;
        let inserted = sqlx::query(concat!(
            "INSERT IGNORE INTO admin_commands (command_id, type, status, result, attempts, node, created_at, \
             updated_at) VALUES (?, ?, 'running', NULL, 1, ?, ",
            millis_to_datetime!(),
            ", ",
            millis_to_datetime!(),
            ")"
        ))
        .bind(command_id)
        .bind(kind)
        .bind(node)
        .bind(now)
        .bind(now)
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        if inserted.rows_affected() == 1 {
            return Ok(Claim::Run { attempt: 1 });
        }
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let row = locked_row(&mut tx, command_id).await?.ok_or(StoreError::NotFound)?;
        let claim = if row.status.is_final() {
            Claim::Done(row)
        } else if row.status == CommandStatus::Running && row.node != node && now - row.updated < lease_ms {
            Claim::Busy { node: row.node }
        } else {
            sqlx::query(concat!(
                "UPDATE admin_commands SET status = 'running', node = ?, attempts = attempts + 1, updated_at = ",
                millis_to_datetime!(),
                " WHERE command_id = ?"
            ))
            .bind(node)
            .bind(now)
            .bind(command_id)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            Claim::Run { attempt: row.attempts + 1 }
        };
        tx.commit().await.map_err(db_error)?;
        Ok(claim)
    }

    async fn release(&self, tenant: TenantId, command_id: &str, node: &str, now: UnixMillis) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        sqlx::query(concat!(
            "UPDATE admin_commands SET status = 'released', updated_at = ",
            millis_to_datetime!(),
            " WHERE command_id = ? AND status = 'running' AND node = ?"
        ))
        .bind(now)
        .bind(command_id)
        .bind(node)
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn finish(&self, tenant: TenantId, command_id: &str, end: &CommandEnd<'_>) -> StoreResult<bool> {
        let CommandEnd { kind, status, result, records, now } = *end;
        let db = self.db(tenant).await?;
        // A command rejected before any claim has no row yet: insert one (not final) to lock it like the rest.
        sqlx::query(concat!(
            "INSERT IGNORE INTO admin_commands (command_id, type, status, result, attempts, node, created_at, \
             updated_at) VALUES (?, ?, 'released', NULL, 0, '', ",
            millis_to_datetime!(),
            ", ",
            millis_to_datetime!(),
            ")"
        ))
        .bind(command_id)
        .bind(kind)
        .bind(now)
        .bind(now)
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let row = locked_row(&mut tx, command_id).await?.ok_or(StoreError::NotFound)?;
        if row.status.is_final() {
            return Ok(false);
        }
        sqlx::query(concat!(
            "UPDATE admin_commands SET status = ?, result = ?, updated_at = ",
            millis_to_datetime!(),
            " WHERE command_id = ?"
        ))
        .bind(status.as_str())
        .bind(result.to_string())
        .bind(now)
        .bind(command_id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        crate::outbox::append(&mut tx, records, now).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    async fn get_command(&self, tenant: TenantId, command_id: &str) -> StoreResult<Option<CommandRecord>> {
        let db = self.db(tenant).await?;
        let row: Option<Row> =
            sqlx::query_as(select!()).bind(command_id).fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(command_of).transpose()?)
    }
}
