//! The credential port over SQLite: the `credentials` table of migration 0017. An add reads and inserts in one
//! `BEGIN IMMEDIATE` transaction, so the account's limit holds; a confirm is one statement whose unique index on
//! `(tenant_id, method, value, claim)` lets only one account confirm a credential.

use crate::SqliteStore;
use crate::codec::{tenant, user_col, user_of};
use crate::error::db_error;
use palaver_core::ports::{Added, Credential, CredentialStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::credentials::{
    CONFIRMED, CredentialRow, confirm_error, confirm_unchanged, credential_of, decide_add,
};
use palaver_store_sql::{bind_confirmed, bind_credential, bind_new_credential};

/// The account that confirmed a credential, if any; bound by the tenant, then [`bind_confirmed!`].
const CONFIRMED_BY: &str =
    "SELECT user_id FROM credentials WHERE tenant_id = ? AND method = ? AND value = ? AND claim = ?";

#[async_trait::async_trait]
impl CredentialStore for SqliteStore {
    async fn add_credential(
        &self,
        tenant_id: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
        max: usize,
    ) -> StoreResult<Added> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let own: Vec<(String, String, bool)> =
            sqlx::query_as("SELECT method, value, done FROM credentials WHERE tenant_id = ? AND user_id = ?")
                .bind(t)
                .bind(user_col(user))
                .fetch_all(&mut *tx)
                .await
                .map_err(db_error)?;
        let confirmed_by = bind_confirmed!(sqlx::query_scalar(CONFIRMED_BY).bind(t), method, value);
        let confirmed_by = confirmed_by.fetch_optional(&mut *tx).await.map_err(db_error)?;
        if let Some(known) = decide_add(user, &own, method, value, confirmed_by, max)? {
            return Ok(known);
        }
        let insert = sqlx::query(
            "INSERT INTO credentials (tenant_id, user_id, method, value, done, claim, created_at, updated_at) \
             VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
        );
        bind_new_credential!(insert.bind(t), user, method, value, now).execute(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Added::New)
    }

    async fn confirm_credential(
        &self,
        tenant_id: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let t = tenant(tenant_id);
        // The unique index refuses a second confirmed row of the credential in this very statement.
        let confirm = sqlx::query(
            "UPDATE credentials SET done = 1, claim = ?, updated_at = ? \
             WHERE tenant_id = ? AND user_id = ? AND method = ? AND value = ? AND done = 0",
        );
        let confirm = bind_credential!(confirm.bind(CONFIRMED).bind(now).bind(t), user, method, value);
        let done = confirm.execute(&self.writer).await.map_err(|e| confirm_error(db_error(e), method))?;
        if done.rows_affected() > 0 {
            return Ok(());
        }
        let sql = "SELECT done FROM credentials WHERE tenant_id = ? AND user_id = ? AND method = ? AND value = ?";
        let own = bind_credential!(sqlx::query_scalar(sql).bind(t), user, method, value);
        confirm_unchanged(own.fetch_optional(&self.writer).await.map_err(db_error)?)
    }

    async fn credentials_of(&self, tenant_id: TenantId, user: UserId) -> StoreResult<Vec<Credential>> {
        let rows: Vec<CredentialRow> = sqlx::query_as(
            "SELECT method, value, done, created_at FROM credentials WHERE tenant_id = ? AND user_id = ? \
             ORDER BY method, value",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(credential_of).collect())
    }

    async fn delete_credential(
        &self,
        tenant_id: TenantId,
        user: UserId,
        method: &str,
        value: &str,
    ) -> StoreResult<bool> {
        let sql = "DELETE FROM credentials WHERE tenant_id = ? AND user_id = ? AND method = ? AND value = ?";
        let delete = bind_credential!(sqlx::query(sql).bind(tenant(tenant_id)), user, method, value);
        Ok(delete.execute(&self.writer).await.map_err(db_error)?.rows_affected() > 0)
    }

    async fn find_by_credential(&self, tenant_id: TenantId, method: &str, value: &str) -> StoreResult<Option<UserId>> {
        let owner = bind_confirmed!(sqlx::query_scalar(CONFIRMED_BY).bind(tenant(tenant_id)), method, value);
        let owner: Option<i64> = owner.fetch_optional(&self.pool).await.map_err(db_error)?;
        Ok(owner.map(user_of))
    }

    async fn forget_credentials(&self, tenant_id: TenantId, user: UserId) -> StoreResult<()> {
        sqlx::query("DELETE FROM credentials WHERE tenant_id = ? AND user_id = ?")
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
