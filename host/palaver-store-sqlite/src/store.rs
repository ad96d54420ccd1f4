//! The SQLite store: opening the database, applying migrations, and the transaction helper the ports share.

use crate::error::{db_error, migrate_error};
use palaver_core::StoreResult;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, Transaction};
use std::path::Path;
use std::time::Duration;

/// How long a statement waits for another connection's write lock before giving up with `Unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a port call waits for a free pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections per file database. SQLite serialises writers anyway; a few connections let reads proceed
/// alongside a write in WAL mode.
const MAX_CONNECTIONS: u32 = 4;

/// The storage ports over one SQLite database. Cloning is cheap and clones share the connection pool.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Readers: WAL lets them run beside the writer.
    pub(crate) pool: SqlitePool,
    /// The one writer connection. SQLite admits one writer at a time; letting several connections race for the
    /// lock makes the losers sleep in the busy handler (milliseconds each), so writes queue here instead.
    pub(crate) writer: SqlitePool,
    /// The batch writer that message appends go through, on the writer connection.
    pub(crate) batch: crate::batch::Writer,
}

impl SqliteStore {
    /// Opens the database at `path`, creating the file if missing, and brings its schema up to date.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await
            .map_err(db_error)?;
        let store = Self::migrated(writer.clone(), writer).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        Ok(Self { pool, ..store })
    }

    /// A private in-memory database, for tests. It lives on exactly one connection that is never closed, because
    /// every new connection to `:memory:` would see an empty database of its own.
    pub async fn open_in_memory() -> StoreResult<Self> {
        let options = SqliteConnectOptions::new().in_memory(true).foreign_keys(true).busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(db_error)?;
        Self::migrated(pool.clone(), pool).await
    }

    /// Applies the migrations embedded from `migrations/sqlite` at compile time.
    async fn migrated(pool: SqlitePool, writer: SqlitePool) -> StoreResult<Self> {
        sqlx::migrate!("../../migrations/sqlite").run(&writer).await.map_err(migrate_error)?;
        let batch = crate::batch::Writer::spawn(writer.clone());
        Ok(Self { pool, writer, batch })
    }

    /// The underlying pool, for health checks and for callers that need to close it before exit.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Waits for in-flight calls and closes every connection, checkpointing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }

    /// Starts a write transaction holding SQLite's write lock from its first statement. A deferred transaction
    /// that reads before writing can fail with `SQLITE_BUSY_SNAPSHOT` when another writer commits in between,
    /// which the busy timeout does not retry; taking the lock up front makes concurrent writers queue instead.
    pub(crate) async fn begin_write(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db_error)
    }
}

/// The database is the embedded node's final authority: while it cannot answer, the node is not ready.
#[async_trait::async_trait]
impl palaver_core::ports::HealthCheck for SqliteStore {
    fn name(&self) -> &'static str {
        "database"
    }

    fn required(&self) -> bool {
        true
    }

    async fn check(&self) -> Result<(), String> {
        sqlx::query("SELECT 1").execute(&self.pool).await.map(|_| ()).map_err(|e| format!("SQLite: {e}"))
    }
}
