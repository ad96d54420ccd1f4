//! Conversions between domain values and their column forms: ids, modes, states, kinds and JSON text.

use palaver_core::{AccessMode, TenantId};
pub(crate) use palaver_store_sql::columns::mode_of;
pub(crate) use palaver_store_sql::columns::{limit_col, risk_flags_col, state_col, tags_col, user_col, user_of};

/// A tenant id as stored. Ids above `i64::MAX` are reinterpreted, never truncated, so they round-trip.
pub(crate) fn tenant(t: TenantId) -> i64 {
    t.0 as i64
}

/// An access mode as stored: its bit set.
pub(crate) fn mode_col(m: AccessMode) -> i64 {
    i64::from(m.0)
}

// The wall clock, for `updated_at` of writes whose port call carries no time.
pub(crate) use palaver_core::now_millis;

#[cfg(test)]
mod tests {
    use super::*;

    // The shared column forms are tested in palaver_store_sql::columns; what is left here is this backend's own.
    #[test]
    fn modes_round_trip_through_their_column_width() {
        assert_eq!(mode_of("m", mode_col(AccessMode::OWNER_FULL)).unwrap(), AccessMode::OWNER_FULL);
    }
}
