//! The user port over SQLite: the `users`, `auth` and `user_tags` tables.

use crate::SqliteStore;
use crate::codec::{
    defacs_of, json_change, json_col, json_of, limit_col, mode_col, state_col, state_of, tags_col, tags_of, tenant,
    user_col, user_of,
};
use crate::error::{CorruptRow, db_error};
use palaver_core::ports::UserStore;
use palaver_core::{AuthRecord, RecordState, StoreError, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate};
use sqlx::{Sqlite, Transaction};

/// The columns of a [`UserRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! user_columns {
    () => {
        "id, created_at, updated_at, state, auth_version, defacs_auth, defacs_anon, public, trusted, tags, \
         last_seen, user_agent"
    };
}

/// A `users` row as selected by `user_columns!`.
#[derive(sqlx::FromRow)]
struct UserRow {
    id: i64,
    created_at: i64,
    updated_at: i64,
    state: String,
    auth_version: i64,
    defacs_auth: i64,
    defacs_anon: i64,
    public: Option<String>,
    trusted: Option<String>,
    tags: String,
    last_seen: Option<i64>,
    user_agent: Option<String>,
}

impl TryFrom<UserRow> for User {
    type Error = CorruptRow;

    fn try_from(r: UserRow) -> Result<Self, CorruptRow> {
        Ok(User {
            id: user_of(r.id),
            created: r.created_at,
            updated: r.updated_at,
            state: state_of(&r.state)?,
            auth_version: r.auth_version,
            defacs: defacs_of(r.defacs_auth, r.defacs_anon)?,
            public: json_of("public", r.public)?,
            trusted: json_of("trusted", r.trusted)?,
            tags: tags_of(&r.tags)?,
            last_seen: r.last_seen,
            user_agent: r.user_agent,
        })
    }
}

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
        let t = tenant(tenant_id);
        let id = user_col(user.id);
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO users (tenant_id, id, created_at, updated_at, state, auth_version, defacs_auth, defacs_anon, \
             public, trusted, tags, last_seen, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(t)
        .bind(id)
        .bind(user.created)
        .bind(user.updated)
        .bind(state_col(user.state))
        .bind(user.auth_version)
        .bind(mode_col(user.defacs.auth))
        .bind(mode_col(user.defacs.anon))
        .bind(json_col(user.public.as_ref()))
        .bind(json_col(user.trusted.as_ref()))
        .bind(tags_col(&user.tags))
        .bind(user.last_seen)
        .bind(user.user_agent.as_deref())
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if let Some(auth) = auth {
            // The credential is always stored under the new user's id, so it cannot attach to another account.
            sqlx::query("INSERT INTO auth (tenant_id, login, user_id, secret_hash) VALUES (?, ?, ?, ?)")
                .bind(t)
                .bind(auth.login.to_lowercase())
                .bind(id)
                .bind(&auth.secret_hash)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        write_tags(&mut tx, t, id, &user.tags).await?;
        tx.commit().await.map_err(db_error)
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
        let (set_public, public) = json_change(update.public.as_ref());
        let (set_trusted, trusted) = json_change(update.trusted.as_ref());
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "UPDATE users SET updated_at = ?3, \
             public = CASE WHEN ?4 THEN ?5 ELSE public END, \
             trusted = CASE WHEN ?6 THEN ?7 ELSE trusted END, \
             tags = COALESCE(?8, tags), \
             defacs_auth = COALESCE(?9, defacs_auth), defacs_anon = COALESCE(?10, defacs_anon) \
             WHERE tenant_id = ?1 AND id = ?2",
        )
        .bind(t)
        .bind(uid)
        .bind(update.updated)
        .bind(set_public)
        .bind(public)
        .bind(set_trusted)
        .bind(trusted)
        .bind(update.tags.as_deref().map(tags_col))
        .bind(update.defacs.map(|d| mode_col(d.auth)))
        .bind(update.defacs.map(|d| mode_col(d.anon)))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
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
        if done.rows_affected() == 0 { Err(StoreError::NotFound) } else { Ok(()) }
    }

    #[tracing::instrument(name = "palaver.store.find_auth", skip_all, fields(tenant = %tenant_id))]
    async fn find_auth(&self, tenant_id: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        let row: Option<(String, i64, String)> =
            sqlx::query_as("SELECT login, user_id, secret_hash FROM auth WHERE tenant_id = ? AND login = ?")
                .bind(tenant(tenant_id))
                .bind(login.to_lowercase())
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        Ok(row.map(|(login, user, secret_hash)| AuthRecord { user: user_of(user), login, secret_hash }))
    }

    #[tracing::instrument(name = "palaver.store.set_secret", skip_all, fields(tenant = %tenant_id))]
    async fn set_secret(&self, tenant_id: TenantId, id: UserId, secret_hash: &str) -> StoreResult<i64> {
        let (t, uid) = (tenant(tenant_id), user_col(id));
        let mut tx = self.begin_write().await?;
        let done = sqlx::query("UPDATE auth SET secret_hash = ? WHERE tenant_id = ? AND user_id = ?")
            .bind(secret_hash)
            .bind(t)
            .bind(uid)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let version: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET auth_version = auth_version + 1 WHERE tenant_id = ? AND id = ? RETURNING auth_version",
        )
        .bind(t)
        .bind(uid)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let version = version.ok_or(StoreError::NotFound)?;
        tx.commit().await.map_err(db_error)?;
        Ok(version)
    }

    async fn revoke_tokens(&self, tenant_id: TenantId, id: UserId, state: Option<RecordState>) -> StoreResult<i64> {
        let version: Option<i64> = sqlx::query_scalar(
            "UPDATE users SET auth_version = auth_version + 1, state = COALESCE(?, state) \
             WHERE tenant_id = ? AND id = ? RETURNING auth_version",
        )
        .bind(state.map(state_col))
        .bind(tenant(tenant_id))
        .bind(user_col(id))
        .fetch_optional(&self.writer)
        .await
        .map_err(db_error)?;
        version.ok_or(StoreError::NotFound)
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
