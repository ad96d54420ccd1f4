//! The user port over a tenant database: the `users`, `auth` and `user_tags` tables.

use crate::MysqlStore;
use crate::codec::{limit_col, state_col, tags_col, user_col, user_of};
use crate::error::db_error;
use palaver_core::ports::{Identity, QueueRecord, UserStore};
use palaver_core::{
    AuthRecord, RecordState, StoreError, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate, now_millis,
};
use palaver_store_sql::rows::UserRow;
use palaver_store_sql::users::{AuthRow, IdentityRow, auth_cols, auth_of, external_cols, identity_of};
use palaver_store_sql::writes::found;
use palaver_store_sql::{bind_user, user_columns};
use sqlx::{MySqlConnection, MySqlPool};

/// Reads a tag list bound as a JSON array as rows, compared byte for byte like the tag columns.
macro_rules! json_tags {
    () => {
        "SELECT j.tag FROM JSON_TABLE(?, '$[*]' COLUMNS \
         (tag VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) j"
    };
}

pub(crate) use json_tags;

/// Replaces the search rows of a user's tags. `INSERT IGNORE` folds repeated tags into one row.
async fn write_tags(conn: &mut MySqlConnection, user: i64, tags: &[String]) -> StoreResult<()> {
    sqlx::query("DELETE FROM user_tags WHERE user_id = ?").bind(user).execute(&mut *conn).await.map_err(db_error)?;
    sqlx::query(concat!("INSERT IGNORE INTO user_tags (user_id, tag) SELECT ?, t.tag FROM (", json_tags!(), ") t"))
        .bind(user)
        .bind(tags_col(tags))
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

#[async_trait::async_trait]
impl UserStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.create_user", skip_all, fields(tenant = %tenant))]
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        insert_user(&self.db(tenant).await?.pool, user, auth, None).await
    }

    #[tracing::instrument(name = "palaver.store.create_external_user", skip_all, fields(tenant = %tenant))]
    async fn create_external_user(
        &self,
        tenant: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()> {
        insert_user(&self.db(tenant).await?.pool, user, auth, Some(external_id)).await
    }

    #[tracing::instrument(name = "palaver.store.find_external", skip_all, fields(tenant = %tenant))]
    async fn find_external(&self, tenant: TenantId, external_id: &str) -> StoreResult<Option<UserId>> {
        let db = self.db(tenant).await?;
        let query = sqlx::query_scalar("SELECT user_id FROM user_external_ids WHERE external_id = ?").bind(external_id);
        let row: Option<i64> = query.fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(user_of))
    }

    #[tracing::instrument(name = "palaver.store.forget_identities", skip_all, fields(tenant = %tenant))]
    async fn forget_identities(&self, tenant: TenantId, id: UserId) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        for sql in ["DELETE FROM auth WHERE user_id = ?", "DELETE FROM user_external_ids WHERE user_id = ?"] {
            sqlx::query(sql).bind(user_col(id)).execute(&mut *tx).await.map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.identity_of", skip_all, fields(tenant = %tenant))]
    async fn identity_of(&self, tenant: TenantId, id: UserId) -> StoreResult<Identity> {
        let db = self.db(tenant).await?;
        let uid = user_col(id);
        let sql = "SELECT (SELECT login FROM auth WHERE user_id = ?), \
                   (SELECT external_id FROM user_external_ids WHERE user_id = ?)";
        let row: IdentityRow = sqlx::query_as(sql).bind(uid).bind(uid).fetch_one(&db.pool).await.map_err(db_error)?;
        Ok(identity_of(row))
    }

    #[tracing::instrument(name = "palaver.store.get_user", skip_all, fields(tenant = %tenant))]
    async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<User>> {
        let db = self.db(tenant).await?;
        let sql = concat!("SELECT ", user_columns!(), " FROM users u WHERE u.id = ?");
        let row: Option<UserRow> =
            sqlx::query_as(sql).bind(user_col(id)).fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(User::try_from).transpose()?)
    }

    #[tracing::instrument(name = "palaver.store.update_user", skip_all, fields(tenant = %tenant))]
    async fn update_user(&self, tenant: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let uid = user_col(id);
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = palaver_store_sql::bind_profile_change!(
            sqlx::query(
                "UPDATE users SET updated_at = ?, \
                 public = IF(?, ?, public), trusted = IF(?, ?, trusted), tags = COALESCE(?, tags), \
                 defacs_auth = COALESCE(?, defacs_auth), defacs_anon = COALESCE(?, defacs_anon) WHERE id = ?",
            ),
            update
        )
        .bind(uid)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        // Rows matched, not changed (CLIENT_FOUND_ROWS): an update that changes nothing still finds the user.
        found(done.rows_affected())?;
        if let Some(tags) = &update.tags {
            write_tags(&mut tx, uid, tags).await?;
        }
        tx.commit().await.map_err(db_error)
    }

    #[tracing::instrument(name = "palaver.store.touch_user", skip_all, fields(tenant = %tenant))]
    async fn touch_user(&self, tenant: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()> {
        let db = self.db(tenant).await?;
        let sql = "UPDATE users SET last_seen = ?, user_agent = COALESCE(?, user_agent) WHERE id = ?";
        let done = sqlx::query(sql).bind(when).bind(ua).bind(user_col(id)).execute(&db.pool).await.map_err(db_error)?;
        found(done.rows_affected())
    }

    #[tracing::instrument(name = "palaver.store.find_auth", skip_all, fields(tenant = %tenant))]
    async fn find_auth(&self, tenant: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        let db = self.db(tenant).await?;
        let query = sqlx::query_as("SELECT login, user_id, secret_hash FROM auth WHERE login = ?");
        let query = query.bind(palaver_core::normalize_login(login));
        let row: Option<AuthRow> = query.fetch_optional(&db.pool).await.map_err(db_error)?;
        Ok(row.map(auth_of))
    }

    #[tracing::instrument(name = "palaver.store.set_secret", skip_all, fields(tenant = %tenant))]
    async fn set_secret(
        &self,
        tenant: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let db = self.db(tenant).await?;
        let uid = user_col(id);
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        let done = sqlx::query("UPDATE auth SET secret_hash = ? WHERE user_id = ?").bind(secret_hash).bind(uid);
        found(done.execute(&mut *tx).await.map_err(db_error)?.rows_affected())?;
        // MariaDB has no UPDATE … RETURNING; the row stays locked by this transaction between the two statements.
        sqlx::query("UPDATE users SET auth_version = auth_version + 1 WHERE id = ?")
            .bind(uid)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let version: Option<i64> = sqlx::query_scalar("SELECT auth_version FROM users WHERE id = ?")
            .bind(uid)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let version = version.ok_or(StoreError::NotFound)?;
        // The audit event commits with the new secret: a crash loses both or neither.
        crate::outbox::append(&mut tx, owed, now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    #[tracing::instrument(name = "palaver.store.revoke_tokens", skip_all, fields(tenant = %tenant))]
    async fn revoke_tokens(
        &self,
        tenant: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let db = self.db(tenant).await?;
        let uid = user_col(id);
        let mut tx = db.pool.begin().await.map_err(db_error)?;
        // The condition reads the row before the change: a deleted account takes no other state.
        let done = sqlx::query(
            "UPDATE users SET auth_version = auth_version + 1, state = COALESCE(?, state) \
             WHERE id = ? AND (state <> 'deleted' OR COALESCE(?, 'deleted') = 'deleted')",
        )
        .bind(state.map(state_col))
        .bind(uid)
        .bind(state.map(state_col))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        found(done.rows_affected())?;
        let version: i64 = sqlx::query_scalar("SELECT auth_version FROM users WHERE id = ?")
            .bind(uid)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        crate::outbox::append(&mut tx, owed, now_millis()).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    #[tracing::instrument(name = "palaver.store.find_users_by_tags", skip_all, fields(tenant = %tenant))]
    async fn find_users_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>> {
        let db = self.db(tenant).await?;
        let sql = concat!(
            "SELECT ",
            user_columns!(),
            " FROM users u WHERE u.state = 'active' AND u.id IN \
             (SELECT g.user_id FROM user_tags g WHERE g.tag IN (",
            json_tags!(),
            ")) ORDER BY u.id LIMIT ?"
        );
        let rows: Vec<UserRow> = sqlx::query_as(sql)
            .bind(tags_col(tags))
            .bind(limit_col(limit))
            .fetch_all(&db.pool)
            .await
            .map_err(db_error)?;
        Ok(rows.into_iter().map(User::try_from).collect::<Result<_, _>>()?)
    }
}

/// Stores a user, its credential and its external id in one transaction: a conflict on any leaves nothing.
async fn insert_user(
    pool: &MySqlPool,
    user: &User,
    auth: Option<&AuthRecord>,
    external: Option<&str>,
) -> StoreResult<()> {
    let mut tx = pool.begin().await.map_err(db_error)?;
    let insert = concat!("INSERT INTO users (", user_columns!(), ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    bind_user!(sqlx::query(insert), user).execute(&mut *tx).await.map_err(db_error)?;
    if let Some(auth) = auth {
        let (login, id, secret_hash) = auth_cols(user, auth);
        let insert = sqlx::query("INSERT INTO auth (login, user_id, secret_hash) VALUES (?, ?, ?)");
        insert.bind(login).bind(id).bind(secret_hash).execute(&mut *tx).await.map_err(db_error)?;
    }
    if let Some(external) = external {
        let (external, id, created) = external_cols(user, external);
        let insert = sqlx::query("INSERT INTO user_external_ids (external_id, user_id, created_at) VALUES (?, ?, ?)");
        insert.bind(external).bind(id).bind(created).execute(&mut *tx).await.map_err(db_error)?;
    }
    write_tags(&mut tx, user_col(user.id), &user.tags).await?;
    tx.commit().await.map_err(db_error)
}
