//! Maps sqlx and decoding failures onto the port's [`StoreError`] kinds, so callers never see sqlx types.

use palaver_core::StoreError;
pub(crate) use palaver_store_sql::columns::CorruptRow;
use sqlx::error::ErrorKind;
use sqlx::mysql::MySqlDatabaseError;

/// Server error numbers that mean "try again later" rather than "this request is wrong": lock waits and
/// deadlocks (the transaction was rolled back), too many connections, a server shutting down or killing the
/// query, and statement timeouts.
const RETRYABLE: [u16; 8] = [
    1040, // ER_CON_COUNT_ERROR
    1053, // ER_SERVER_SHUTDOWN
    1203, // ER_TOO_MANY_USER_CONNECTIONS
    1205, // ER_LOCK_WAIT_TIMEOUT
    1213, // ER_LOCK_DEADLOCK
    1927, // ER_CONNECTION_KILLED
    1969, // ER_STATEMENT_TIMEOUT (MariaDB)
    3024, // ER_QUERY_TIMEOUT (MySQL)
];

/// Unique violations become `Conflict`; unreachable servers, pool timeouts, deadlocks and lock waits become
/// `Unavailable`; everything else is `Internal`.
pub(crate) fn db_error(err: sqlx::Error) -> StoreError {
    match &err {
        sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
            StoreError::Conflict(db.message().to_owned())
        }
        sqlx::Error::Database(db) if db.try_downcast_ref::<MySqlDatabaseError>().is_some_and(is_retryable) => {
            StoreError::Unavailable(db.message().to_owned())
        }
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(err.to_string()),
        _ => StoreError::Internal(err.to_string()),
    }
}

/// True if the error is a unique-key violation, the one failure the batch writer answers row by row.
pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation)
}

/// Classifies a borrowed error the way [`db_error`] would, for the failures that matter to callers holding it.
fn db_error_ref(err: &sqlx::Error) -> Option<StoreError> {
    match err {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => {
            Some(StoreError::Unavailable(err.to_string()))
        }
        sqlx::Error::Database(db) if db.try_downcast_ref::<MySqlDatabaseError>().is_some_and(is_retryable) => {
            Some(StoreError::Unavailable(db.message().to_owned()))
        }
        _ => None,
    }
}

/// True if the error is a deadlock (`ER_LOCK_DEADLOCK`): the server rolled the transaction back, and running it
/// again from the start is safe.
pub(crate) fn is_deadlock(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db)
        if db.try_downcast_ref::<MySqlDatabaseError>().is_some_and(|e| e.number() == ER_LOCK_DEADLOCK))
}

/// The server's error number for a deadlock.
const ER_LOCK_DEADLOCK: u16 = 1213;

fn is_retryable(err: &MySqlDatabaseError) -> bool {
    RETRYABLE.contains(&err.number())
}

/// Turns a migration failure into a port error. A lost connection is retryable; a migration that fails or a
/// schema that was left half-applied is not something a retry fixes (see `migrations/mysql/README.md`).
pub(crate) fn migrate_error(err: sqlx::migrate::MigrateError) -> StoreError {
    use sqlx::migrate::MigrateError;
    let retryable = match &err {
        MigrateError::Execute(inner) | MigrateError::ExecuteMigration(inner, _) => {
            matches!(db_error_ref(inner), Some(StoreError::Unavailable(_)))
        }
        _ => false,
    };
    if retryable {
        StoreError::Unavailable(format!("migration interrupted: {err}"))
    } else {
        StoreError::Internal(format!("migration failed: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_io_failures_are_retryable() {
        assert!(matches!(db_error(sqlx::Error::PoolTimedOut), StoreError::Unavailable(_)));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(matches!(db_error(sqlx::Error::Io(refused)), StoreError::Unavailable(_)));
        assert!(matches!(db_error(sqlx::Error::RowNotFound), StoreError::Internal(_)));
        assert!(!is_unique_violation(&sqlx::Error::PoolClosed));
        assert!(!is_deadlock(&sqlx::Error::PoolClosed));
        assert!(RETRYABLE.contains(&ER_LOCK_DEADLOCK));
    }
}
