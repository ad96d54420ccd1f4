//! The credential port over a tenant database: the `credentials` table of migration 0016. An add locks the
//! account's rows (`FOR UPDATE`) before it counts and inserts, so concurrent adds cannot take it past its limit; a
//! confirm is one statement whose unique key on `(method, value, claim)` lets only one account confirm a
//! credential.

use crate::MysqlStore;
use crate::codec::{user_col, user_of};
use crate::error::{db_error, is_deadlock};
use palaver_core::ports::{Added, Credential, CredentialStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::credentials::{
    CONFIRMED, CredentialRow, confirm_error, confirm_unchanged, credential_of, decide_add,
};
use palaver_store_sql::{bind_confirmed, bind_credential, bind_new_credential};
use sqlx::MySqlPool;

/// The account that confirmed a credential, if any; bound by [`bind_confirmed!`].
const CONFIRMED_BY: &str = "SELECT user_id FROM credentials WHERE method = ? AND value = ? AND claim = ?";

/// How many times an add runs again after losing a deadlock. Two first adds of one account both lock the empty
/// gap of its rows and then block each other's insert; the server rolls one back, which then finds the other's row.
const ADD_ATTEMPTS: usize = 5;

/// One add in one transaction: `Err` for a database failure (a deadlock among them, to run again), `Ok` with
/// what the port answers otherwise.
async fn try_add(
    pool: &MySqlPool,
    user: UserId,
    method: &str,
    value: &str,
    now: UnixMillis,
    max: usize,
) -> Result<StoreResult<Added>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // Locks the account's rows and the gap after them: a concurrent add of the same account waits here, and then
    // reads (and counts) what this one committed.
    let own: Vec<(String, String, bool)> =
        sqlx::query_as("SELECT method, value, done FROM credentials WHERE user_id = ? FOR UPDATE")
            .bind(user_col(user))
            .fetch_all(&mut *tx)
            .await?;
    let confirmed_by =
        bind_confirmed!(sqlx::query_scalar(CONFIRMED_BY), method, value).fetch_optional(&mut *tx).await?;
    match decide_add(user, &own, method, value, confirmed_by, max) {
        Ok(Some(known)) => return Ok(Ok(known)),
        Err(refused) => return Ok(Err(refused)),
        Ok(None) => {}
    }
    let insert = "INSERT INTO credentials (user_id, method, value, done, claim, created_at, updated_at) \
                  VALUES (?, ?, ?, 0, ?, ?, ?)";
    bind_new_credential!(sqlx::query(insert), user, method, value, now).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(Ok(Added::New))
}

#[async_trait::async_trait]
impl CredentialStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.add_credential", skip_all, fields(tenant = %tenant))]
    async fn add_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
        max: usize,
    ) -> StoreResult<Added> {
        let db = self.db(tenant).await?;
        let mut attempt = 1;
        loop {
            match try_add(&db.pool, user, method, value, now, max).await {
                Ok(answer) => return answer,
                Err(err) if is_deadlock(&err) && attempt < ADD_ATTEMPTS => attempt += 1,
                Err(err) => return Err(db_error(err)),
            }
        }
    }

    #[tracing::instrument(name = "palaver.store.confirm_credential", skip_all, fields(tenant = %tenant))]
    async fn confirm_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        // The unique key refuses a second confirmed row of the credential in this very statement.
        let confirm = sqlx::query(
            "UPDATE credentials SET done = 1, claim = ?, updated_at = ? \
             WHERE user_id = ? AND method = ? AND value = ? AND done = 0",
        );
        let confirm = bind_credential!(confirm.bind(CONFIRMED).bind(now), user, method, value);
        if confirm.execute(&db.pool).await.map_err(|e| confirm_error(db_error(e), method))?.rows_affected() > 0 {
            return Ok(());
        }
        let sql = "SELECT done FROM credentials WHERE user_id = ? AND method = ? AND value = ?";
        let own = bind_credential!(sqlx::query_scalar(sql), user, method, value);
        confirm_unchanged(own.fetch_optional(&db.pool).await.map_err(db_error)?)
    }

    #[tracing::instrument(name = "palaver.store.credentials_of", skip_all, fields(tenant = %tenant))]
    async fn credentials_of(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Credential>> {
        let db = self.db(tenant).await?;
        let rows: Vec<CredentialRow> = sqlx::query_as(
            "SELECT method, value, done, created_at FROM credentials WHERE user_id = ? ORDER BY method, value",
        )
        .bind(user_col(user))
        .fetch_all(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(credential_of).collect())
    }

    #[tracing::instrument(name = "palaver.store.delete_credential", skip_all, fields(tenant = %tenant))]
    async fn delete_credential(&self, tenant: TenantId, user: UserId, method: &str, value: &str) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let sql = "DELETE FROM credentials WHERE user_id = ? AND method = ? AND value = ?";
        let delete = bind_credential!(sqlx::query(sql), user, method, value);
        Ok(delete.execute(&db.pool).await.map_err(db_error)?.rows_affected() > 0)
    }

    #[tracing::instrument(name = "palaver.store.find_by_credential", skip_all, fields(tenant = %tenant))]
    async fn find_by_credential(&self, tenant: TenantId, method: &str, value: &str) -> StoreResult<Option<UserId>> {
        let db = self.db(tenant).await?;
        let owner = bind_confirmed!(sqlx::query_scalar(CONFIRMED_BY), method, value);
        let owner: Option<i64> = owner.fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(owner.map(user_of))
    }

    #[tracing::instrument(name = "palaver.store.forget_credentials", skip_all, fields(tenant = %tenant))]
    async fn forget_credentials(&self, tenant: TenantId, user: UserId) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        sqlx::query("DELETE FROM credentials WHERE user_id = ?")
            .bind(user_col(user))
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
