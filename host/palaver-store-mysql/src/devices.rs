//! The device port over a tenant database: the `im_devices` table of migration 0008, keyed by device id, so an
//! upsert of a token another user registered moves the row to the new user in one statement. `last_seen` is a
//! UTC `DATETIME(3)`, converted in SQL. The delayed pushes are `im_push_delayed` of migration 0011.

use crate::MysqlStore;
use crate::codec::{datetime_to_millis, millis_to_datetime, user_col};
use crate::error::db_error;
use palaver_core::ports::{DelayedPush, Device, DeviceStore};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};
use palaver_store_sql::bind_device;
use palaver_store_sql::devices::{DeviceRow, device_of};

#[async_trait::async_trait]
impl DeviceStore for MysqlStore {
    async fn upsert_device(&self, tenant: TenantId, d: &Device) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "INSERT INTO im_devices (device_id, user_id, platform, provider, token, app, language, last_seen) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ",
            millis_to_datetime!(),
            ") ON DUPLICATE KEY UPDATE user_id = VALUES(user_id), platform = VALUES(platform), \
             provider = VALUES(provider), token = VALUES(token), app = VALUES(app), language = VALUES(language), \
             last_seen = VALUES(last_seen)"
        );
        bind_device!(sqlx::query(sql), d).execute(&db.pool).await.map_err(db_error)?;
        Ok(())
    }

    async fn delete_device(&self, tenant: TenantId, user: UserId, device_id: &str) -> StoreResult<bool> {
        let db = self.db(tenant).await?;
        let done = sqlx::query("DELETE FROM im_devices WHERE device_id = ? AND user_id = ?")
            .bind(device_id)
            .bind(user_col(user))
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Device>> {
        let db = self.db(tenant).await?;
        let rows: Vec<DeviceRow> = sqlx::query_as(concat!(
            "SELECT device_id, user_id, platform, provider, token, app, language, ",
            datetime_to_millis!("last_seen"),
            " FROM im_devices WHERE user_id = ? ORDER BY device_id"
        ))
        .bind(user_col(user))
        .fetch_all(&db.pool)
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().map(device_of).collect())
    }

    async fn count_devices(&self, tenant: TenantId, user: UserId) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM im_devices WHERE user_id = ?")
            .bind(user_col(user))
            .fetch_one(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn put_delayed(&self, tenant: TenantId, due_at: UnixMillis, push: &DelayedPush) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        sqlx::query("INSERT INTO im_push_delayed (due_at, push) VALUES (?, ?)")
            .bind(due_at)
            .bind(palaver_store_sql::delayed::encode(push)?)
            .execute(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn count_delayed(&self, tenant: TenantId) -> StoreResult<u64> {
        let db = self.db(tenant).await?;
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM im_push_delayed").fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(n.max(0) as u64)
    }

    async fn claim_delayed(
        &self,
        tenant: TenantId,
        owner: &str,
        now: UnixMillis,
        lease_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<(i64, DelayedPush)>> {
        let db = self.db(tenant).await?;
        // The update is a locking read of the rows as last committed, so a claim running beside it waits and
        // then finds them held; the claim's own mark (unique per claim) finds what it took.
        static CLAIMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CLAIMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mark = format!("{owner}#{now}#{n}");
        sqlx::query(
            "UPDATE im_push_delayed SET claimed_by = ?, claimed_until = ? \
             WHERE due_at <= ? AND claimed_until <= ? ORDER BY due_at, id LIMIT ?",
        )
        .bind(&mark)
        .bind(now + lease_ms)
        .bind(now)
        .bind(now)
        .bind(u64::try_from(limit).unwrap_or(u64::MAX))
        .execute(&db.pool)
        .await
        .map_err(db_error)?;
        let rows: Vec<(i64, i64, String)> =
            sqlx::query_as("SELECT id, due_at, push FROM im_push_delayed WHERE claimed_by = ?")
                .bind(&mark)
                .fetch_all(&db.pool)
                .await
                .map_err(db_error)?;
        palaver_store_sql::delayed::decode(rows)
    }

    async fn remove_delayed(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        for id in ids {
            sqlx::query("DELETE FROM im_push_delayed WHERE id = ?")
                .bind(id)
                .execute(&db.pool)
                .await
                .map_err(db_error)?;
        }
        Ok(())
    }
}
