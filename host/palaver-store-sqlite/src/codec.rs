//! Conversions between domain values and their column forms: ids, modes, states, kinds and JSON text.

use palaver_core::columns::CorruptRow;
pub(crate) use palaver_core::columns::mode_of;
pub(crate) use palaver_core::columns::{
    audit_of, json_change, json_col, json_of, kind_col, kind_of, limit_col, risk_flags_col, risk_flags_of, state_col,
    state_of, tags_col, tags_of, user_col, user_of,
};
use palaver_core::{AccessMode, DefaultAccess, TenantId, UnixMillis};
use std::time::{SystemTime, UNIX_EPOCH};

/// A tenant id as stored. Ids above `i64::MAX` are reinterpreted, never truncated, so they round-trip.
pub(crate) fn tenant(t: TenantId) -> i64 {
    t.0 as i64
}

/// An access mode as stored: its bit set.
pub(crate) fn mode_col(m: AccessMode) -> i64 {
    i64::from(m.0)
}

/// Default access from its two columns.
pub(crate) fn defacs_of(auth: i64, anon: i64) -> Result<DefaultAccess, CorruptRow> {
    Ok(DefaultAccess { auth: mode_of("defacs_auth", auth)?, anon: mode_of("defacs_anon", anon)? })
}

/// The wall clock in Unix milliseconds, for `updated_at` of writes whose port call carries no time. A clock before
/// 1970 reads as the epoch rather than failing the write.
pub(crate) fn now_millis() -> UnixMillis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| UnixMillis::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shared column forms are tested in palaver_core::columns; what is left here is this backend's own.
    #[test]
    fn modes_round_trip_through_their_column_width() {
        assert_eq!(mode_of("m", mode_col(AccessMode::OWNER_FULL)).unwrap(), AccessMode::OWNER_FULL);
        assert_eq!(defacs_of(mode_col(AccessMode::GROUP_AUTH), 0).unwrap().auth, AccessMode::GROUP_AUTH);
    }
}
