//! The one error body of both HTTP APIs (`/v1/im` and `/v1/admin`).

use crate::Reason;
use serde::{Deserialize, Serialize};

/// Every HTTP refusal: `{"code": <HTTP status>, "reason": "<STABLE_NAME>", "message": "…"}`. The status is
/// the reason's, so the body and the status line never disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// The HTTP status, which is the reason's Tinode ctrl code.
    pub code: u16,
    pub reason: Reason,
    /// A sentence for people; never parse it.
    pub message: String,
}

impl ErrorBody {
    pub fn new(reason: Reason, message: impl Into<String>) -> ErrorBody {
        ErrorBody { code: reason.status(), reason, message: message.into() }
    }
}
