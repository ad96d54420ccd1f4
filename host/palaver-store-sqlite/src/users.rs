//! The user port over SQLite: the `users`, `auth` and `user_tags` tables.

use crate::SqliteStore;
use crate::codec::{limit_col, state_col, tags_col, tenant, user_col, user_of};
use crate::error::db_error;
use palaver_core::ports::{Identity, QueueRecord, UserStore};
use palaver_core::{
    AuthRecord, RecordState, StoreError, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate, now_millis,
};
use palaver_store_sql::rows::UserRow;
use palaver_store_sql::users::{AuthRow, IdentityRow, auth_cols, auth_of, external_cols, identity_of};
use palaver_store_sql::writes::found;
use palaver_store_sql::{bind_user, user_columns};
use sqlx::{Sqlite, Transaction};

/// Replaces the search rows of a user's tags.
async fn write_tags(tx: &mut Transaction<'static, Sqlite>, t: i64, user: i64, tags: &[String]) -> StoreResult<()> {
    sqlx::query("DELETE FROM user_tags WHERE tenant_id = ? AND user_id = ?")
        .bind(t)
        .bind(user)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    sqlx::query("INSERT OR IGNORE INTO user_tags (tenant_id, user_id, tag) SELECT ?, ?, value FROM json_each(?)")
        .bind(t)
        .bind(user)
        .bind(tags_col(tags))
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    Ok(())
}

#[async_trait::async_trait]
impl UserStore for SqliteStore {
    #[tracing::instrument(name = "palaver.store.create_user", skip_all, fields(tenant = %tenant_id))]
    async fn create_user(&self, tenant_id: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        self.insert_user(tenant_id, user, auth, None).await
    }

    #[tracing::instrument(name = "palaver.store.create_external_user", skip_all, fields(tenant = %tenant_id))]
    async fn create_external_user(
        &self,
        tenant_id: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()> {
        self.insert_user(tenant_id, user, auth, Some(external_id)).await
    }

    #[tracing::instrument(name = "palaver.store.find_external", skip_all, fields(tenant = %tenant_id))]
    async fn find_external(&self, tenant_id: TenantId, external_id: &str) -> StoreResult<Option<UserId>> {
        let row: Option<i64> =
            sqlx::query_scalar("SELECT user_id FROM user_external_ids WHERE tenant_id = ? AND external_id = ?")
                .bind(tenant(tenant_id))
                .bind(external_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        Ok(row.map(user_of))
    }

    #[tracing::instrument(name = "palaver.store.forget_identities", skip_all, fields(tenant = %tenant_id))]
    async fn forget_identities(&self, tenant_id: TenantId, id: UserId) -> StoreResult<()> {
        let (t, uid) = (tenant(tenant_id), user_col(id));
        let mut tx = self.begin_write().await?;
        for sql in [
            "DELETE FROM auth WHERE tenant_id = ? AND user_id = ?",
            "DELETE FROM user_external_ids WHERE tenant_id = ? AND user_id = ?",
        ] {
            sqlx::query(sql).bind(t).bind(uid).execute(&mut *tx).await.map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.identity_of", skip_all, fields(tenant = %tenant_id))]
    async fn identity_of(&self, tenant_id: TenantId, id: UserId) -> StoreResult<Identity> {
        let row: IdentityRow = sqlx::query_as(
            "SELECT (SELECT login FROM auth WHERE tenant_id = ?1 AND user_id = ?2), \
             (SELECT external_id FROM user_external_ids WHERE tenant_id = ?1 AND user_id = ?2)",
        )
        .bind(tenant(tenant_id))
        .bind(user_col(id))
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(identity_of(row))
    }

    #[tracing::instrument(name = "palaver.store.get_user", skip_all, fields(tenant = %tenant_id))]
    async fn get_user(&self, tenant_id: TenantId, id: UserId) -> StoreResult<Option<User>> {
        let sql = concat!("SELECT ", user_columns!(), " FROM users WHERE tenant_id = ? AND id = ?");
        let row: Option<UserRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(user_col(id))
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(row.map(User::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.update_user", skip_all, fields(tenant = %tenant_id))]
    async fn update_user(&self, tenant_id: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()> {
        let (t, uid) = (tenant(tenant_id), user_col(id));
        let mut tx = self.begin_write().await?;
        let done = palaver_store_sql::bind_profile_change!(
            sqlx::query(
                "UPDATE users SET updated_at = ?3, \
                 public = CASE WHEN ?4 THEN ?5 ELSE public END, \
                 trusted = CASE WHEN ?6 THEN ?7 ELSE trusted END, \
                 tags = COALESCE(?8, tags), \
                 defacs_auth = COALESCE(?9, defacs_auth), defacs_anon = COALESCE(?10, defacs_anon) \
                 WHERE tenant_id = ?1 AND id = ?2",
            )
            .bind(t)
            .bind(uid),
            update
        )
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())?;
        if let Some(tags) = &update.tags {
            write_tags(&mut tx, t, uid, tags).await?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.touch_user", skip_all, fields(tenant = %tenant_id))]
    async fn touch_user(&self, tenant_id: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()> {
        let done = sqlx::query(
            "UPDATE users SET last_seen = ?, user_agent = COALESCE(?, user_agent) WHERE tenant_id = ? AND id = ?",
        )
        .bind(when)
        .bind(ua)
        .bind(tenant(tenant_id))
        .bind(user_col(id))
        .execute(&self.writer)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.find_auth", skip_all, fields(tenant = %tenant_id))]
    async fn find_auth(&self, tenant_id: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        let row: Option<AuthRow> =
            sqlx::query_as("SELECT login, user_id, secret_hash FROM auth WHERE tenant_id = ? AND login = ?")
                .bind(tenant(tenant_id))
                .bind(palaver_core::normalize_login(login))
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        Ok(row.map(auth_of))
    }

    #[tracing::instrument(name = "palaver.store.set_secret", skip_all, fields(tenant = %tenant_id))]
    async fn set_secret(
        &self,
        tenant_id: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let (t, uid) = (tenant(tenant_id), user_col(id));
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("UPDATE auth SET secret_hash = ? WHERE tenant_id = ? AND user_id = ?")
            .bind(secret_hash)
            .bind(t)
            .bind(uid)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        found(done.rows_affected())?;
        let version: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET auth_version = auth_version + 1 WHERE tenant_id = ? AND id = ? RETURNING auth_version",
        )
        .bind(t)
        .bind(uid)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let version = version.ok_or(StoreError::NotFound)?;
        // The audit event commits with the new secret: a crash loses both or neither.
        crate::outbox::append(&mut tx, t, owed, now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    #[tracing::instrument(name = "palaver.store.revoke_tokens", skip_all, fields(tenant = %tenant_id))]
    async fn revoke_tokens(
        &self,
        tenant_id: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let version: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET auth_version = auth_version + 1, state = COALESCE(?1, state) \
             WHERE tenant_id = ?2 AND id = ?3 AND (state <> 'deleted' OR COALESCE(?1, 'deleted') = 'deleted') \
             RETURNING auth_version",
        )
        .bind(state.map(state_col))
        .bind(t)
        .bind(user_col(id))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let version = version.ok_or(StoreError::NotFound)?;
        crate::outbox::append(&mut tx, t, owed, now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    #[tracing::instrument(name = "palaver.store.find_users_by_tags", skip_all, fields(tenant = %tenant_id))]
    async fn find_users_by_tags(&self, tenant_id: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>> {
        let sql = concat!(
            "SELECT ",
            user_columns!(),
            " FROM users u WHERE u.tenant_id = ?1 AND u.state = 'active' AND EXISTS \
             (SELECT 1 FROM user_tags g WHERE g.tenant_id = ?1 AND g.user_id = u.id \
              AND g.tag IN (SELECT value FROM json_each(?2))) \
             ORDER BY u.id LIMIT ?3"
        );
        let rows: Vec<UserRow> = sqlx::query_as(sql)
            .bind(tenant(tenant_id))
            .bind(tags_col(tags))
            .bind(limit_col(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(User::try_from).collect::<Result<_, _>>()?)
    }
}

impl SqliteStore {
    /// Stores a user, its credential and its external id in one transaction: a conflict on any leaves nothing.
    async fn insert_user(
        &self,
        tenant_id: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external: Option<&str>,
    ) -> StoreResult<()> {
        let t = tenant(tenant_id);
        let mut tx = self.begin_write().await?;
        let insert = sqlx::query(concat!(
            "INSERT INTO users (tenant_id, ",
            user_columns!(),
            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ));
        bind_user!(insert.bind(t), user).execute(&mut *tx).await.map_err(db_error)?;
        if let Some(auth) = auth {
            let (login, id, secret_hash) = auth_cols(user, auth);
            sqlx::query("INSERT INTO auth (tenant_id, login, user_id, secret_hash) VALUES (?, ?, ?, ?)")
                .bind(t)
                .bind(login)
                .bind(id)
                .bind(secret_hash)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        if let Some(external) = external {
            let (external, id, created) = external_cols(user, external);
            sqlx::query(
                "INSERT INTO user_external_ids (tenant_id, external_id, user_id, created_at) VALUES (?, ?, ?, ?)",
            )
            .bind(t)
            .bind(external)
            .bind(id)
            .bind(created)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        }
        write_tags(&mut tx, t, user_col(user.id), &user.tags).await?;
        tx.commit().await.map_err(db_error)
    }
}
