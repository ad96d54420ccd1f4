//! The device port over SQLite: the `im_devices` table of migration 0008, keyed by tenant and device id, so an
//! upsert of a token another user registered moves the row to the new user in one statement.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::{Device, DeviceStore};
use palaver_core::{StoreResult, TenantId, UserId};
use palaver_store_sql::columns::{user_col, user_of};

type DeviceRow = (String, i64, String, String, String, String, String, i64);

fn device_of((device_id, user, platform, provider, token, app, language, last_seen): DeviceRow) -> Device {
    Device { user: user_of(user), device_id, platform, provider, token, app, language, last_seen }
}

#[async_trait::async_trait]
impl DeviceStore for SqliteStore {
    async fn upsert_device(&self, tenant_id: TenantId, d: &Device) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO im_devices \
             (tenant_id, device_id, user_id, platform, provider, token, app, language, last_seen) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, device_id) DO UPDATE SET user_id = excluded.user_id, \
             platform = excluded.platform, provider = excluded.provider, token = excluded.token, \
             app = excluded.app, language = excluded.language, last_seen = excluded.last_seen",
        )
        .bind(tenant(tenant_id))
        .bind(&d.device_id)
        .bind(user_col(d.user))
        .bind(&d.platform)
        .bind(&d.provider)
        .bind(&d.token)
        .bind(&d.app)
        .bind(&d.language)
        .bind(d.last_seen)
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
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
}
