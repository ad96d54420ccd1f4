//! The delayed-push table's shared parts: how a push is stored (JSON in one column) and how the rows a claim
//! returns become pushes, in the order they fell due.

use palaver_core::ports::DelayedPush;
use palaver_core::{StoreError, StoreResult};

/// The column value of a delayed push.
pub fn encode(push: &DelayedPush) -> StoreResult<String> {
    serde_json::to_string(push).map_err(|e| StoreError::Internal(format!("a delayed push does not encode: {e}")))
}

/// Claimed rows `(id, due_at, push)` as pushes with their ids, oldest due first (a claim's `RETURNING` or its
/// read-back gives no order); a row that does not decode is corrupt.
pub fn decode(mut rows: Vec<(i64, i64, String)>) -> StoreResult<Vec<(i64, DelayedPush)>> {
    rows.sort_by_key(|(id, due, _)| (*due, *id));
    rows.into_iter()
        .map(|(id, _, json)| {
            serde_json::from_str(&json)
                .map(|push| (id, push))
                .map_err(|e| StoreError::Internal(format!("delayed push {id} does not decode: {e}")))
        })
        .collect()
}
