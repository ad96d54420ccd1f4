//! The MariaDB store: connecting to the control database, applying its migrations, and reaching tenant databases
//! through the pool registry.

use crate::batch::BatchSettings;
use crate::config::MysqlConfig;
use crate::error::db_error;
use crate::pools::{PoolSettings, TenantDb, TenantPools, spawn_reaper};
use crate::schema;
use palaver_core::{StoreError, StoreResult, TenantId};
use sqlx::MySqlPool;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use std::sync::Arc;

/// The storage ports and the tenant registry over MariaDB (or MySQL): a control database holding the registry,
/// and one database per tenant. Cloning is cheap; clones share every pool.
///
/// Needs a Tokio runtime: the batch writers and the idle-pool reaper are tasks on it.
#[derive(Clone, Debug)]
pub struct MysqlStore {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: MysqlConfig,
    /// Connect options for the server, without a database.
    pub(crate) base: MySqlConnectOptions,
    pub(crate) control: MySqlPool,
    pub(crate) pools: Arc<TenantPools>,
}

/// What [`MysqlStore::migrate_all`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Tenants whose database is now at the current schema version.
    pub migrated: Vec<TenantId>,
    /// Tenants whose migration failed, with the reason (also kept in the registry's `migrate_error`).
    pub failed: Vec<(TenantId, String)>,
}

impl MysqlStore {
    /// Connects to the control database named by `config.url`, creating it if missing, and brings its schema up
    /// to date. Tenant databases are not touched: see [`MysqlStore::migrate_all`].
    pub async fn connect(config: MysqlConfig) -> StoreResult<Self> {
        let invalid = |err: crate::ConfigError| StoreError::Internal(err.to_string());
        config.validate().map_err(invalid)?;
        let (base, control_db) = schema::split_url(&config.url).map_err(invalid)?;
        schema::create_database(&base, &control_db).await?;
        let control = MySqlPoolOptions::new()
            .max_connections(config.control_max_connections)
            .acquire_timeout(config.acquire_timeout)
            .idle_timeout(Some(config.idle_pool_timeout))
            .connect_with(base.clone().database(&control_db))
            .await
            .map_err(db_error)?;
        schema::migrate_control(&control).await?;
        let settings = PoolSettings {
            max_connections: config.max_connections_per_tenant,
            max_pools: config.max_tenant_pools,
            idle_timeout: config.idle_pool_timeout,
            acquire_timeout: config.acquire_timeout,
            batch: BatchSettings {
                max_rows: config.batch_max_rows,
                max_delay: config.batch_max_delay,
                metrics: Default::default(),
            },
        };
        let pools = TenantPools::new(control.clone(), base.clone(), settings);
        spawn_reaper(&pools);
        tracing::info!(config = ?config, "connected to the MySQL control database");
        Ok(Self { inner: Arc::new(Inner { config, base, control, pools }) })
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &MysqlConfig {
        &self.inner.config
    }

    /// The control database's pool, for health checks and operator tools.
    pub fn control_pool(&self) -> &MySqlPool {
        &self.inner.control
    }

    /// How many tenant pools are open right now.
    pub fn open_tenant_pools(&self) -> usize {
        self.inner.pools.len()
    }

    /// The pool of an active tenant's database, opening it if needed, for tools and tests that need raw access.
    /// `NotFound` for unknown and disabled tenants.
    pub async fn tenant_pool(&self, tenant: TenantId) -> StoreResult<MySqlPool> {
        Ok(self.db(tenant).await?.pool.clone())
    }

    /// Closes every pool after the calls in flight, for a clean exit.
    pub async fn close(&self) {
        for pool in self.inner.pools.drain() {
            pool.close().await;
        }
        self.inner.control.close().await;
    }

    /// Brings every registered tenant's database to the current schema version, continuing past failures. Each
    /// tenant's outcome is also recorded in the registry (`schema_version`, `migrate_error`).
    #[tracing::instrument(name = "palaver.store.migrate_all", skip_all)]
    pub async fn migrate_all(&self) -> StoreResult<MigrationReport> {
        let tenants: Vec<(u64, String)> = sqlx::query_as("SELECT id, database_name FROM tenants ORDER BY id")
            .fetch_all(&self.inner.control)
            .await
            .map_err(db_error)?;
        let mut report = MigrationReport::default();
        for (id, database) in tenants {
            let outcome = schema::migrate_tenant(&self.inner.base, &database).await;
            let (version, error) = match &outcome {
                Ok(version) => (Some(*version), None),
                Err(err) => (None, Some(err.to_string())),
            };
            sqlx::query(
                "UPDATE tenants SET schema_version = COALESCE(?, schema_version), migrate_error = ? WHERE id = ?",
            )
            .bind(version)
            .bind(error.as_deref())
            .bind(id)
            .execute(&self.inner.control)
            .await
            .map_err(db_error)?;
            match error {
                None => report.migrated.push(TenantId(id)),
                Some(err) => {
                    tracing::error!(tenant = id, database, error = %err, "tenant migration failed");
                    report.failed.push((TenantId(id), err));
                }
            }
        }
        Ok(report)
    }

    /// The open database of an active tenant.
    pub(crate) async fn db(&self, tenant: TenantId) -> StoreResult<Arc<TenantDb>> {
        self.inner.pools.get(tenant).await
    }
}

/// The control database answers for the registry and stands for the server: while it cannot answer, API keys
/// cannot be resolved and the node is not ready. (A single tenant database down fails that tenant's calls only.)
#[async_trait::async_trait]
impl palaver_core::ports::HealthCheck for MysqlStore {
    fn name(&self) -> &'static str {
        "database"
    }

    fn required(&self) -> bool {
        true
    }

    async fn check(&self) -> Result<(), String> {
        let ping = sqlx::query("SELECT 1").execute(&self.inner.control).await;
        ping.map(|_| ()).map_err(|e| format!("MariaDB control database: {e}"))
    }
}
