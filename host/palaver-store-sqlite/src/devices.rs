//! The device port over SQLite: the `im_devices` table of migration 0008, keyed by tenant and device id, so an
//! upsert of a token another user registered moves the row to the new user in one statement.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{DelayedPush, Device, DeviceStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::bind_device;
use palaver_store_sql::columns::user_col;
use palaver_store_sql::devices::{DeviceRow, device_of};

#[async_trait::async_trait]
impl DeviceStore for SqliteStore {
    async fn upsert_device(&self, tenant_id: TenantId, d: &Device) -> StoreResult<()> {
        let upsert = sqlx::query(
            "INSERT INTO im_devices \
             (tenant_id, device_id, user_id, platform, provider, token, app, language, last_seen) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, device_id) DO UPDATE SET user_id = excluded.user_id, \
             platform = excluded.platform, provider = excluded.provider, token = excluded.token, \
             app = excluded.app, language = excluded.language, last_seen = excluded.last_seen",
        );
        bind_device!(upsert.bind(tenant(tenant_id)), d).execute(&self.writer).await.map_err(db_error)?;
        Ok(())
    }

    async fn delete_device(&self, tenant_id: TenantId, user: UserId, device_id: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM im_devices WHERE tenant_id = ? AND device_id = ? AND user_id = ?")
            .bind(tenant(tenant_id))
            .bind(device_id)
            .bind(user_col(user))
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_devices(&self, tenant_id: TenantId, user: UserId) -> StoreResult<Vec<Device>> {
        let rows: Vec<DeviceRow> = sqlx::query_as(
            "SELECT device_id, user_id, platform, provider, token, app, language, last_seen FROM im_devices \
             WHERE tenant_id = ? AND user_id = ? ORDER BY device_id",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(user))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(device_of).collect())
    }

    async fn count_devices(&self, tenant_id: TenantId, user: UserId) -> StoreResult<u64> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM im_devices WHERE tenant_id = ? AND user_id = ?")
            .bind(tenant(tenant_id))
            .bind(user_col(user))
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn put_delayed(&self, tenant_id: TenantId, due_at: UnixMillis, push: &DelayedPush) -> StoreResult<()> {
        let json = palaver_store_sql::delayed::encode(push)?;
        sqlx::query("INSERT INTO im_push_delayed (tenant_id, due_at, push) VALUES (?, ?, ?)")
            .bind(tenant(tenant_id))
            .bind(due_at)
            .bind(json)
            .execute(&self.writer)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn count_delayed(&self, tenant_id: TenantId) -> StoreResult<u64> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM im_push_delayed WHERE tenant_id = ?")
            .bind(tenant(tenant_id))
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn claim_delayed(
        &self,
        tenant_id: TenantId,
        owner: &str,
        now: UnixMillis,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<(i64, DelayedPush)>> {
        // One statement on the one writer both picks and claims the rows, so two claimers never share one.
        let rows: Vec<(i64, i64, String)> = sqlx::query_as(
            "UPDATE im_push_delayed SET claimed_by = ?, claimed_until = ? WHERE id IN (\
               SELECT id FROM im_push_delayed WHERE tenant_id = ? AND due_at <= ? AND claimed_until <= ? \
               ORDER BY due_at, id LIMIT ?) RETURNING id, due_at, push",
        )
        .bind(owner)
        .bind(now + lease_ms)
        .bind(tenant(tenant_id))
        .bind(now)
        .bind(now)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.writer)
        .await
        .map_err(db_error)?;
        palaver_store_sql::delayed::decode(rows)
    }

    async fn remove_delayed(&self, tenant_id: TenantId, ids: &[i64]) -> StoreResult<()> {
        for id in ids {
            sqlx::query("DELETE FROM im_push_delayed WHERE tenant_id = ? AND id = ?")
                .bind(tenant(tenant_id))
                .bind(id)
                .execute(&self.writer)
                .await
                .map_err(db_error)?;
        }
        Ok(())
    }
}
