//! Databases and their migrations: creating the control and tenant databases, and bringing each up to date with
//! its own migration set (`migrations/mysql/control`, `migrations/mysql/tenant`), embedded at compile time.
//!
//! Each database keeps its applied versions in its own `_sqlx_migrations` table. Concurrent runs on one database
//! are serialised by a named lock (`locked_run`: sqlx's own lock does not wait on MariaDB). sqlx records a version
//! as dirty before running it and clean after, and refuses to go past a dirty version: MariaDB commits every DDL
//! statement on its own, so a crash can leave a migration half applied, and `migrations/mysql/README.md` says how
//! to finish it.

use crate::config::{ConfigError, is_identifier};
use crate::error::{db_error, migrate_error};
use palaver_core::{StoreError, StoreResult};
use sqlx::migrate::Migrator;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection};
use std::str::FromStr;

/// The control database's migrations.
fn control_migrator() -> Migrator {
    sqlx::migrate!("../../migrations/mysql/control")
}

/// Every tenant database's migrations.
fn tenant_migrator() -> Migrator {
    sqlx::migrate!("../../migrations/mysql/tenant")
}

/// The highest version of the tenant migrations this build embeds.
pub(crate) fn tenant_schema_version() -> i64 {
    tenant_migrator().iter().map(|m| m.version).max().unwrap_or(0)
}

/// Splits a MySQL URL into connect options without a database and the database it names. The name must be a
/// plain identifier, since it is spliced into `CREATE DATABASE`.
pub(crate) fn split_url(url: &str) -> Result<(MySqlConnectOptions, String), ConfigError> {
    let bad = |why: &str| ConfigError::Url(format!("{why} (expected mysql://user:password@host:port/database)"));
    let authority = url.find("://").map(|i| i + 3).ok_or_else(|| bad("no scheme"))?;
    let (head, query) = url.split_once('?').map_or((url, None), |(h, q)| (h, Some(q)));
    let slash = head[authority..].find('/').map(|i| authority + i).ok_or_else(|| bad("no database"))?;
    let database = &head[slash + 1..];
    if !is_identifier(database) {
        return Err(bad("the database name must be [A-Za-z0-9_]"));
    }
    let base = match query {
        Some(q) => format!("{}?{q}", &head[..slash]),
        None => head[..slash].to_owned(),
    };
    let options = MySqlConnectOptions::from_str(&base).map_err(|e| ConfigError::Url(e.to_string()))?;
    Ok((options, database.to_owned()))
}

/// True for database names the store itself forms: identifier characters plus the `-` tenant codes may hold.
/// Checked again right before splicing, so that no path can put a backquote into DDL.
fn spliceable(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Creates `database` if it does not exist, with byte-wise collation by default.
pub(crate) async fn create_database(base: &MySqlConnectOptions, database: &str) -> StoreResult<()> {
    if !spliceable(database) {
        return Err(StoreError::Internal(format!("refusing to create database {database:?}")));
    }
    let mut conn = base.connect().await.map_err(db_error)?;
    let sql = format!("CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
    sqlx::query(AssertSqlSafe(sql)).execute(&mut conn).await.map_err(db_error)?;
    conn.close().await.map_err(db_error)
}

/// Applies the control migrations over one of the control pool's connections.
pub(crate) async fn migrate_control(pool: &sqlx::MySqlPool) -> StoreResult<()> {
    let mut conn = pool.acquire().await.map_err(db_error)?;
    locked_run(&control_migrator(), &mut conn).await
}

/// Brings one tenant database up to date on a connection of its own (tenant pools are not opened for this), and
/// returns the schema version it is now at.
pub(crate) async fn migrate_tenant(base: &MySqlConnectOptions, database: &str) -> StoreResult<i64> {
    let mut conn: MySqlConnection = base.clone().database(database).connect().await.map_err(db_error)?;
    // `run_direct` rather than `run`: the latter's `Acquire` bound is not general enough for futures that must
    // be `Send` across the async-trait ports.
    let outcome = locked_run(&tenant_migrator(), &mut conn).await;
    // The connection is closed either way; a failure to close politely changes nothing about the outcome.
    let _ = conn.close().await;
    outcome.map(|()| tenant_schema_version())
}

/// How long a run waits for another node's run of the same database's migrations, in seconds.
const MIGRATION_LOCK_WAIT_SECONDS: i64 = 120;

/// Runs `migrator` on the connection's database under a named lock. sqlx takes its own lock with
/// `GET_LOCK(name, -1)`, which MySQL reads as "wait forever" but MariaDB answers at once with NULL without
/// waiting (and sqlx ignores the answer), so on MariaDB nodes starting together on a fresh database ran the same
/// migrations at once and failed on each other's half-applied version ("migration 1 is partially applied").
async fn locked_run(migrator: &Migrator, conn: &mut MySqlConnection) -> StoreResult<()> {
    let database: Option<String> =
        sqlx::query_scalar("SELECT DATABASE()").fetch_one(&mut *conn).await.map_err(db_error)?;
    // Lock names are at most 64 characters; a truncated name can only serialise two databases needlessly.
    let name: String = format!("palaver_migrate:{}", database.unwrap_or_default()).chars().take(64).collect();
    let got: Option<i64> = sqlx::query_scalar("SELECT GET_LOCK(?, ?)")
        .bind(&name)
        .bind(MIGRATION_LOCK_WAIT_SECONDS)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error)?;
    if got != Some(1) {
        return Err(StoreError::Unavailable(format!("timed out waiting for the migration lock {name}")));
    }
    let outcome = migrator.run_direct(None, &mut *conn, false).await.map_err(migrate_error);
    // Released before a pooled connection goes back to its pool; a session's locks also end with it.
    let released = sqlx::query("SELECT RELEASE_LOCK(?)").bind(&name).execute(&mut *conn).await;
    outcome.and(released.map(|_| ()).map_err(db_error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_server_and_database() {
        let (options, db) = split_url("mysql://u:p@127.0.0.1:3307/palaver_control").unwrap();
        assert_eq!((db.as_str(), options.get_port(), options.get_database()), ("palaver_control", 3307, None));
        let (options, db) = split_url("mysql://u@h/ctl?ssl-mode=disabled").unwrap();
        assert_eq!((db.as_str(), options.get_host()), ("ctl", "h"));
        assert!(split_url("mysql://u:p@h:3306").is_err(), "no database");
        assert!(split_url("mysql://u:p@h:3306/bad`name").is_err());
        assert!(split_url("127.0.0.1/db").is_err());
    }

    #[test]
    fn tls_settings_in_the_url_reach_the_connect_options() {
        let (options, _) = split_url("mysql://u:p@db.example/ctl?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ca.pem").unwrap();
        let shown = format!("{options:?}");
        assert!(shown.contains("VerifyIdentity") && shown.contains("/etc/ca.pem"), "{shown}");
        assert!(split_url("mysql://u:p@db.example/ctl?ssl-mode=SOMETIMES").is_err(), "an unknown mode is refused");
    }

    /// The MariaDB of the tests has TLS off: a client built with TLS fails the upgrade the server cannot do,
    /// where one built without TLS would refuse to try. Needs MariaDB on 127.0.0.1:3306 (or
    /// `PALAVER_TEST_MYSQL_URL`'s server).
    #[test]
    fn the_client_is_built_with_tls() {
        use sqlx::ConnectOptions;
        let url = std::env::var("PALAVER_TEST_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://palaver:palaver@127.0.0.1:3306/palaver_control".into());
        let (options, _) = split_url(&url).unwrap();
        let options = options.ssl_mode(sqlx::mysql::MySqlSslMode::Required);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let err = rt.block_on(options.connect()).map(drop).expect_err("the server has TLS off");
        let text = err.to_string();
        assert!(!text.contains("without TLS support"), "sqlx lacks TLS: {text}");
        assert!(text.to_lowercase().contains("tls"), "the TLS upgrade was tried: {text}");
    }

    #[test]
    fn only_plain_names_are_spliced() {
        assert!(spliceable("palaver_t_other-1"));
        assert!(!spliceable("x`; DROP DATABASE y") && !spliceable("") && !spliceable(&"a".repeat(65)));
    }

    #[test]
    fn embedded_migrations_are_numbered() {
        assert!(tenant_schema_version() >= 2);
        assert!(control_migrator().iter().count() >= 1);
    }
}
