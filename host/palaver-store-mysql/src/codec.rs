//! Conversions between domain values and their column forms: ids, modes, states, kinds, JSON text and times.

use palaver_core::{StoreError, StoreResult};
pub(crate) use palaver_store_sql::columns::mode_of;
pub(crate) use palaver_store_sql::columns::{limit_col, risk_flags_col, state_col, tags_col, user_col, user_of};
use sqlx::mysql::MySqlQueryResult;

/// Splices a bound Unix-millisecond parameter into SQL as a `DATETIME(3)`. Date arithmetic from the epoch literal
/// ignores the session time zone (unlike `FROM_UNIXTIME`), and covers the whole `DATETIME` range rather than
/// stopping in 2038, so the stored value is UTC whatever the connection's settings.
macro_rules! millis_to_datetime {
    () => {
        "TIMESTAMPADD(MICROSECOND, ? * 1000, '1970-01-01 00:00:00')"
    };
}

/// Reads a `DATETIME(3)` column back as Unix milliseconds, the inverse of `millis_to_datetime!`.
macro_rules! datetime_to_millis {
    ($column:literal) => {
        concat!("(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ", $column, ") DIV 1000)")
    };
}

pub(crate) use {datetime_to_millis, millis_to_datetime};

/// `millis_to_datetime!` split around its placeholder, for statements built at run time.
pub(crate) const DATETIME_OPEN: &str = "TIMESTAMPADD(MICROSECOND, ";
pub(crate) const DATETIME_CLOSE: &str = " * 1000, '1970-01-01 00:00:00')";

/// The id an `INSERT` gave its auto-increment row, in the signed form the id columns are read back in.
pub(crate) fn insert_id(done: &MySqlQueryResult) -> StoreResult<i64> {
    i64::try_from(done.last_insert_id()).map_err(|e| StoreError::Internal(e.to_string()))
}

// The wall clock, for writes whose port call carries no time.
pub(crate) use palaver_core::now_millis;

#[cfg(test)]
mod tests {
    use super::*;

    // The shared column forms are tested in palaver_store_sql::columns; what is left here is this backend's own.
    #[test]
    fn time_conversions_are_inverse_sql() {
        assert_eq!(millis_to_datetime!(), format!("{DATETIME_OPEN}?{DATETIME_CLOSE}"));
        assert_eq!(
            datetime_to_millis!("created_at"),
            "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', created_at) DIV 1000)"
        );
    }
}
