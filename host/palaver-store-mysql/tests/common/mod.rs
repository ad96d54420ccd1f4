//! Shared set-up for the MariaDB tests: the server from `PALAVER_TEST_MYSQL_URL`, throwaway databases per case
//! (dropped when the case ends), and the `PALAVER_SKIP_MYSQL=1` escape hatch.
//!
//! An unreachable server fails the tests, so a broken environment never passes silently; set
//! `PALAVER_SKIP_MYSQL=1` to skip them with a notice instead.

#![allow(dead_code, unreachable_pub)]

use palaver_contract::Fixture;
use palaver_core::ports::TenantStore;
use palaver_store_mysql::{MysqlConfig, MysqlStore};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection};
use std::time::Duration;

/// The server the tests use, without a database.
pub fn server_url() -> String {
    let url =
        std::env::var("PALAVER_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://palaver:palaver@127.0.0.1:3306".into());
    url.trim_end_matches('/').to_owned()
}

/// True (after printing a notice) when the MariaDB tests are to be skipped.
pub fn skip() -> bool {
    let skip = std::env::var("PALAVER_SKIP_MYSQL").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("notice: PALAVER_SKIP_MYSQL=1, skipping a MariaDB test");
    }
    skip
}

/// Databases named with a prefix unique to one case; all of them are dropped when this is dropped.
pub struct Scratch {
    pub prefix: String,
}

impl Scratch {
    pub fn new() -> Self {
        Self { prefix: format!("pvt{:08x}_", rand::random::<u32>()) }
    }

    /// The defaults, pointed at this case's control database and tenant prefix, with a short batch delay.
    pub fn config(&self) -> MysqlConfig {
        MysqlConfig {
            tenant_database_prefix: format!("{}t_", self.prefix),
            acquire_timeout: Duration::from_secs(10),
            ..MysqlConfig::new(format!("{}/{}control", server_url(), self.prefix))
        }
    }

    pub async fn store(&self) -> MysqlStore {
        self.store_with(self.config()).await
    }

    pub async fn store_with(&self, config: MysqlConfig) -> MysqlStore {
        match MysqlStore::connect(config).await {
            Ok(store) => store,
            Err(err) => panic!(
                "cannot reach MariaDB at {} ({err}); start it with `. scripts/lib/services.sh && start_mariadb`, \
                 or set PALAVER_SKIP_MYSQL=1 to skip these tests",
                server_url()
            ),
        }
    }

    /// A raw connection to one of this case's databases (`control`, `t_acme`, …).
    pub async fn connect(&self, suffix: &str) -> MySqlConnection {
        let url = format!("{}/{}{suffix}", server_url(), self.prefix);
        MySqlConnection::connect(&url).await.expect("connect to a scratch database")
    }
}

impl Drop for Scratch {
    /// Drops this case's databases on a thread of its own, since `Drop` cannot await on the test's runtime.
    fn drop(&mut self) {
        let prefix = self.prefix.clone();
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let Ok(mut conn) = MySqlConnection::connect(&server_url()).await else { return };
                let pattern = format!("{}%", prefix.replace('_', "\\_"));
                let names: Vec<String> =
                    sqlx::query_scalar("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?")
                        .bind(pattern)
                        .fetch_all(&mut conn)
                        .await
                        .unwrap_or_default();
                for name in names.into_iter().filter(|n| n.starts_with(&prefix) && !n.contains('`')) {
                    let _ = sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS `{name}`")))
                        .execute(&mut conn)
                        .await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// A storage fixture: a fresh control database and two fresh tenants, dropped after the case.
pub async fn storage_fixture() -> Fixture<MysqlStore> {
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let a = store.create_tenant("a", "Tenant A").await.expect("create tenant a");
    let b = store.create_tenant("b", "Tenant B").await.expect("create tenant b");
    Fixture::with_guard(store, scratch).with_tenants(a.id, b.id)
}

/// A fixture over a fresh control database only, with no tenant created (tenants 1 and 2 are just ids to the
/// cluster-wide tables), dropped after the case.
pub async fn control_fixture() -> Fixture<MysqlStore> {
    let scratch = Scratch::new();
    let store = scratch.store().await;
    Fixture::with_guard(store, scratch)
}
