//! The tenant registry over the control database: `tenants` and `api_keys`. Creating a tenant also creates and
//! migrates its database, and registers it only then, so a registered tenant always has a usable database.

use crate::MysqlStore;
use crate::codec::now_millis;
use crate::config::valid_code;
use crate::error::{CorruptRow, db_error};
use crate::schema;
use palaver_core::ports::TenantStore;
use palaver_core::{StoreError, StoreResult, Tenant, TenantId, TenantState};
use sqlx::error::ErrorKind;

/// The code of the tenant that exists on first start and owns the demo API key.
pub const DEFAULT_TENANT_CODE: &str = "default";

/// The columns of a [`TenantRow`], as a literal so that `concat!` can splice it into static SQL.
macro_rules! select_tenant {
    () => {
        "SELECT t.id, t.code, t.name, t.status, t.database_name, t.config, t.created_at, t.updated_at FROM tenants t"
    };
}

/// A `tenants` row as selected by `select_tenant!`.
#[derive(sqlx::FromRow)]
struct TenantRow {
    id: u64,
    code: String,
    name: String,
    status: String,
    database_name: String,
    config: String,
    created_at: i64,
    updated_at: i64,
}

fn state_col(state: TenantState) -> &'static str {
    match state {
        TenantState::Active => "active",
        TenantState::Disabled => "disabled",
    }
}

impl TenantRow {
    fn into_tenant(self, api_keys: Vec<String>) -> Result<Tenant, CorruptRow> {
        let state = match self.status.as_str() {
            "active" => TenantState::Active,
            "disabled" => TenantState::Disabled,
            other => return Err(CorruptRow::Value { column: "status", value: other.to_owned() }),
        };
        let config =
            serde_json::from_str(&self.config).map_err(|source| CorruptRow::Json { column: "config", source })?;
        Ok(Tenant {
            id: TenantId(self.id),
            code: self.code,
            name: self.name,
            state,
            database: self.database_name,
            api_keys,
            config,
            created: self.created_at,
            updated: self.updated_at,
        })
    }
}

impl MysqlStore {
    /// Makes sure the `default` tenant exists (created with id 1, [`TenantId::DEFAULT`], when that id is free)
    /// and owns `api_key`, the demo key. Safe to call on every start. `Conflict` if another tenant owns the key.
    #[tracing::instrument(name = "palaver.store.ensure_default_tenant", skip_all)]
    pub async fn ensure_default_tenant(&self, api_key: &str) -> StoreResult<Tenant> {
        let tenant = match self.find_tenant_by_code(DEFAULT_TENANT_CODE).await? {
            Some(tenant) => tenant,
            None => match self.register(DEFAULT_TENANT_CODE, "Default", Some(TenantId::DEFAULT)).await {
                Ok(tenant) => tenant,
                // Another node created it between the lookup and the insert.
                Err(StoreError::Conflict(_)) => {
                    self.find_tenant_by_code(DEFAULT_TENANT_CODE).await?.ok_or(StoreError::NotFound)?
                }
                Err(err) => return Err(err),
            },
        };
        self.add_api_key(tenant.id, api_key).await?;
        self.get_tenant(tenant.id).await?.ok_or(StoreError::NotFound)
    }

    /// Creates and migrates the tenant's database, then registers it, under `id` if given and free.
    async fn register(&self, code: &str, name: &str, id: Option<TenantId>) -> StoreResult<Tenant> {
        // The port has no error kind for bad input, and `Conflict` would tell the caller to pick another code
        // when the problem is its shape: an invalid code is a caller bug, reported as `Internal` (as the memory
        // registry does).
        if !valid_code(code) {
            return Err(StoreError::Internal(format!("invalid tenant code {code:?}")));
        }
        if self.find_tenant_by_code(code).await?.is_some() {
            return Err(StoreError::Conflict(format!("tenant code {code} is taken")));
        }
        let database = format!("{}{code}", self.inner.config.tenant_database_prefix);
        schema::create_database(&self.inner.base, &database).await?;
        let version = schema::migrate_tenant(&self.inner.base, &database).await?;
        let id = match id {
            Some(id) => {
                let taken: Option<u64> = sqlx::query_scalar("SELECT id FROM tenants WHERE id = ?")
                    .bind(id.0)
                    .fetch_optional(&self.inner.control)
                    .await
                    .map_err(db_error)?;
                taken.is_none().then_some(id.0)
            }
            None => None,
        };
        let now = now_millis();
        // A NULL id takes the next AUTO_INCREMENT value, so ids grow in creation order.
        let done = sqlx::query(
            "INSERT INTO tenants (id, code, name, status, database_name, config, schema_version, created_at, \
             updated_at) VALUES (?, ?, ?, 'active', ?, '{}', ?, ?, ?)",
        )
        .bind(id)
        .bind(code)
        .bind(name)
        .bind(&database)
        .bind(version)
        .bind(now)
        .bind(now)
        .execute(&self.inner.control)
        .await
        .map_err(|err| match db_error(err) {
            StoreError::Conflict(detail) => StoreError::Conflict(format!("tenant code {code} is taken: {detail}")),
            other => other,
        })?;
        tracing::info!(code, database, "registered a tenant");
        let id = TenantId(id.unwrap_or(done.last_insert_id()));
        self.get_tenant(id).await?.ok_or(StoreError::NotFound)
    }

    /// The API keys of one tenant, sorted.
    async fn keys_of(&self, id: u64) -> StoreResult<Vec<String>> {
        sqlx::query_scalar("SELECT api_key FROM api_keys WHERE tenant_id = ? ORDER BY api_key")
            .bind(id)
            .fetch_all(&self.inner.control)
            .await
            .map_err(db_error)
    }

    /// Completes an optional row with its keys.
    async fn with_keys(&self, row: Option<TenantRow>) -> StoreResult<Option<Tenant>> {
        match row {
            Some(row) => {
                let keys = self.keys_of(row.id).await?;
                Ok(Some(row.into_tenant(keys)?))
            }
            None => Ok(None),
        }
    }

    async fn tenant_where(&self, sql: &'static str, value: &str) -> StoreResult<Option<Tenant>> {
        let row = sqlx::query_as(sql).bind(value).fetch_optional(&self.inner.control).await.map_err(db_error)?;
        self.with_keys(row).await
    }
}

#[async_trait::async_trait]
impl TenantStore for MysqlStore {
    #[tracing::instrument(name = "palaver.store.create_tenant", skip_all, fields(code))]
    async fn create_tenant(&self, code: &str, name: &str) -> StoreResult<Tenant> {
        self.register(code, name, None).await
    }

    #[tracing::instrument(name = "palaver.store.get_tenant", skip_all, fields(tenant = %id))]
    async fn get_tenant(&self, id: TenantId) -> StoreResult<Option<Tenant>> {
        let row = sqlx::query_as(concat!(select_tenant!(), " WHERE t.id = ?"))
            .bind(id.0)
            .fetch_optional(&self.inner.control)
            .await
            .map_err(db_error)?;
        self.with_keys(row).await
    }

    #[tracing::instrument(name = "palaver.store.find_tenant_by_code", skip_all)]
    async fn find_tenant_by_code(&self, code: &str) -> StoreResult<Option<Tenant>> {
        self.tenant_where(concat!(select_tenant!(), " WHERE t.code = ?"), code).await
    }

    #[tracing::instrument(name = "palaver.store.find_tenant_by_api_key", skip_all)]
    async fn find_tenant_by_api_key(&self, api_key: &str) -> StoreResult<Option<Tenant>> {
        let sql = concat!(select_tenant!(), " JOIN api_keys k ON k.tenant_id = t.id WHERE k.api_key = ?");
        self.tenant_where(sql, api_key).await
    }

    #[tracing::instrument(name = "palaver.store.list_tenants", skip_all)]
    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>> {
        let rows: Vec<TenantRow> = sqlx::query_as(concat!(select_tenant!(), " ORDER BY t.id"))
            .fetch_all(&self.inner.control)
            .await
            .map_err(db_error)?;
        let keys: Vec<(u64, String)> = sqlx::query_as("SELECT tenant_id, api_key FROM api_keys ORDER BY api_key")
            .fetch_all(&self.inner.control)
            .await
            .map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                let mine = keys.iter().filter(|(t, _)| *t == row.id).map(|(_, k)| k.clone()).collect();
                Ok(row.into_tenant(mine)?)
            })
            .collect()
    }

    #[tracing::instrument(name = "palaver.store.set_tenant_state", skip_all, fields(tenant = %id))]
    async fn set_tenant_state(&self, id: TenantId, state: TenantState) -> StoreResult<()> {
        let done = sqlx::query("UPDATE tenants SET status = ?, updated_at = ? WHERE id = ?")
            .bind(state_col(state))
            .bind(now_millis())
            .bind(id.0)
            .execute(&self.inner.control)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        // This node stops serving a disabled tenant at once; other nodes notice on their next reaper pass.
        if state == TenantState::Disabled {
            self.inner.pools.evict(id);
        }
        Ok(())
    }

    #[tracing::instrument(name = "palaver.store.remove_api_key", skip_all, fields(tenant = %id))]
    async fn remove_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()> {
        let removed = sqlx::query("DELETE FROM api_keys WHERE api_key = ? AND tenant_id = ?")
            .bind(api_key)
            .bind(id.0)
            .execute(&self.inner.control)
            .await
            .map_err(db_error)?;
        if removed.rows_affected() == 0 { Err(StoreError::NotFound) } else { Ok(()) }
    }

    #[tracing::instrument(name = "palaver.store.add_api_key", skip_all, fields(tenant = %id))]
    async fn add_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()> {
        let inserted = sqlx::query("INSERT INTO api_keys (api_key, tenant_id, created_at) VALUES (?, ?, ?)")
            .bind(api_key)
            .bind(id.0)
            .bind(now_millis())
            .execute(&self.inner.control)
            .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(db)) if db.kind() == ErrorKind::ForeignKeyViolation => Err(StoreError::NotFound),
            Err(err) => match db_error(err) {
                // A key must resolve to exactly one tenant; adding it again to its own tenant is a harmless repeat.
                StoreError::Conflict(detail) => {
                    let owner: Option<u64> = sqlx::query_scalar("SELECT tenant_id FROM api_keys WHERE api_key = ?")
                        .bind(api_key)
                        .fetch_optional(&self.inner.control)
                        .await
                        .map_err(db_error)?;
                    if owner == Some(id.0) {
                        Ok(())
                    } else {
                        Err(StoreError::Conflict(format!("api key belongs to another tenant: {detail}")))
                    }
                }
                other => Err(other),
            },
        }
    }
}
