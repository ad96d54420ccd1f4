//! The tenant settings table's shared parts: a document is stored as its JSON text in one column, checked
//! against the size bound on the way in and decoded on the way out.

use palaver_core::ports::MAX_SETTING_BYTES;
use palaver_core::{StoreError, StoreResult};
use serde_json::Value;

/// The column value of a settings document. The caller checked the size; a document over [`MAX_SETTING_BYTES`]
/// that reaches here anyway is refused rather than stored.
pub fn encode(name: &str, value: &Value) -> StoreResult<String> {
    let json = value.to_string();
    if json.len() > MAX_SETTING_BYTES {
        return Err(StoreError::Internal(format!("setting {name} is over {MAX_SETTING_BYTES} bytes")));
    }
    Ok(json)
}

/// A stored document; one that does not decode is corrupt.
pub fn decode(name: &str, json: Option<String>) -> StoreResult<Option<Value>> {
    json.map(|j| serde_json::from_str(&j).map_err(|e| StoreError::Internal(format!("setting {name} is corrupt: {e}"))))
        .transpose()
}
