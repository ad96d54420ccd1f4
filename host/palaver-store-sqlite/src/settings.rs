//! The tenant settings port over SQLite: the `im_settings` table of migration 0012, one row per tenant and
//! document name, replaced whole by each write.

use crate::SqliteStore;
use crate::codec::tenant;
use crate::error::db_error;
use palaver_core::ports::SettingsStore;
use palaver_core::{StoreResult, TenantId, now_millis};
use palaver_store_sql::settings::{decode, encode};
use serde_json::Value;

#[async_trait::async_trait]
impl SettingsStore for SqliteStore {
    async fn get_setting(&self, tenant_id: TenantId, name: &str) -> StoreResult<Option<Value>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT value FROM im_settings WHERE tenant_id = ? AND name = ?")
            .bind(tenant(tenant_id))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        decode(name, row.map(|(v,)| v))
    }

    async fn put_setting(&self, tenant_id: TenantId, name: &str, value: Option<&Value>) -> StoreResult<()> {
        let query = match value {
            Some(v) => sqlx::query(
                "INSERT INTO im_settings (tenant_id, name, value, updated_at) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (tenant_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(tenant(tenant_id))
            .bind(name)
            .bind(encode(name, v)?)
            .bind(now_millis()),
            None => sqlx::query("DELETE FROM im_settings WHERE tenant_id = ? AND name = ?")
                .bind(tenant(tenant_id))
                .bind(name),
        };
        query.execute(&self.writer).await.map_err(db_error)?;
        Ok(())
    }
}
