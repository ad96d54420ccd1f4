//! Maps sqlx and decoding failures onto the port's [`StoreError`] kinds, so callers never see sqlx types.

use palaver_core::StoreError;
use sqlx::error::ErrorKind;

/// SQLite's primary result codes for "the database is locked by someone else" (`SQLITE_BUSY`, `SQLITE_LOCKED`).
/// Extended codes carry the primary code in their low byte.
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// Unique violations become `Conflict`, a busy database, pool timeouts and I/O failures become `Unavailable`,
/// and everything else is `Internal`.
pub(crate) fn db_error(err: sqlx::Error) -> StoreError {
    match &err {
        sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
            StoreError::Conflict(db.message().to_owned())
        }
        sqlx::Error::Database(db) if is_busy(db.code().as_deref()) => StoreError::Unavailable(db.message().to_owned()),
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => {
            StoreError::Unavailable(err.to_string())
        }
        _ => StoreError::Internal(err.to_string()),
    }
}

/// True if an extended SQLite result code, as sqlx renders it, means the database was locked.
fn is_busy(code: Option<&str>) -> bool {
    code.and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| matches!(c & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
}

/// Turns a migration failure into an `Internal` error: a schema that cannot be brought up to date is not
/// something a retry fixes.
pub(crate) fn migrate_error(err: sqlx::migrate::MigrateError) -> StoreError {
    StoreError::Internal(format!("migration failed: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_codes_are_recognised() {
        assert!(is_busy(Some("5")));
        assert!(is_busy(Some("517")), "SQLITE_BUSY_SNAPSHOT");
        assert!(is_busy(Some("6")));
        assert!(!is_busy(Some("2067")), "SQLITE_CONSTRAINT_UNIQUE");
        assert!(!is_busy(None));
        assert!(matches!(db_error(sqlx::Error::PoolTimedOut), StoreError::Unavailable(_)));
        assert!(matches!(db_error(sqlx::Error::RowNotFound), StoreError::Internal(_)));
    }
}
