//! What the affected-row count of a conditional write means, the same on both backends: the adapters' updates
//! each carry their condition in the `WHERE` clause, so a count of zero is the condition failing.

use palaver_core::ports::REQUEST_NOT_PENDING;
use palaver_core::{StoreError, StoreResult};

/// `NotFound` when a write matched no row: what it is keyed on does not exist (or is no longer active).
pub fn found(rows_matched: u64) -> StoreResult<()> {
    if rows_matched == 0 { Err(StoreError::NotFound) } else { Ok(()) }
}

/// What the update of a decided request (`… AND status = 'pending'`, a friend or a join request) that changed
/// `rows` rows means: anything but the one request is a request no longer pending.
pub fn still_pending(rows: u64) -> StoreResult<()> {
    if rows == 1 { Ok(()) } else { Err(StoreError::Conflict(REQUEST_NOT_PENDING.to_owned())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_outcomes() {
        assert!(matches!(found(0), Err(StoreError::NotFound)));
        assert!(found(1).is_ok());
        assert!(matches!(still_pending(0), Err(StoreError::Conflict(_))));
        assert!(still_pending(1).is_ok());
    }
}
