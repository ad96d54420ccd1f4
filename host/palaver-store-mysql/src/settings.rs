//! The tenant settings port over a tenant database: the `im_settings` table of migration 0012, one row per
//! document name, replaced whole by each write; `updated_at` is a UTC `DATETIME(3)`, converted in SQL.

use crate::MysqlStore;
use crate::codec::millis_to_datetime;
use crate::error::db_error;
use palaver_core::ports::SettingsStore;
use palaver_core::{StoreResult, TenantId, now_millis};
use palaver_store_sql::settings::{decode, encode};
use serde_json::Value;

#[async_trait::async_trait]
impl SettingsStore for MysqlStore {
    async fn get_setting(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Value>> {
        let db = self.db(tenant).await?;
        let row: Option<(String,)> = sqlx::query_as("SELECT value FROM im_settings WHERE name = ?")
            .bind(name)
            .fetch_optional(&db.pool)
            .await
            .map_err(db_error)?;
        decode(name, row.map(|(v,)| v))
    }

    async fn put_setting(&self, tenant: TenantId, name: &str, value: Option<&Value>) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let query = match value {
            Some(v) => sqlx::query(concat!(
                "INSERT INTO im_settings (name, value, updated_at) VALUES (?, ?, ",
                millis_to_datetime!(),
                ") ON DUPLICATE KEY UPDATE value = VALUES(value), updated_at = VALUES(updated_at)"
            ))
            .bind(name)
            .bind(encode(name, v)?)
            .bind(now_millis()),
            None => sqlx::query("DELETE FROM im_settings WHERE name = ?").bind(name),
        };
        query.execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }
}
