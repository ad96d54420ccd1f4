//! Conversions between domain values and their column forms: ids, modes, states, kinds and JSON text.

use palaver_core::TenantId;
pub(crate) use palaver_store_sql::columns::mode_of;
pub(crate) use palaver_store_sql::columns::{limit_col, risk_flags_col, state_col, tags_col, user_col, user_of};

/// A tenant id as stored. Ids above `i64::MAX` are reinterpreted, never truncated, so they round-trip.
pub(crate) fn tenant(t: TenantId) -> i64 {
    t.0 as i64
}

// The wall clock, for `updated_at` of writes whose port call carries no time.
pub(crate) use palaver_core::now_millis;
