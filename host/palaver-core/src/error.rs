//! The error every port returns: a small set of kinds the service can branch on, with the adapter's own
//! message kept for logs. Services never see sqlx or redis error types.

/// What went wrong in a port call.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The row, key or record does not exist.
    #[error("not found")]
    NotFound,
    /// A uniqueness rule was violated (login taken, topic exists, seq already stored).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The backing service is unreachable, timed out or refused; the caller may retry later.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Anything else: corrupt data, a bug in the adapter, an unexpected reply.
    #[error("internal: {0}")]
    Internal(String),
}

/// The result of a port call.
pub type StoreResult<T> = Result<T, StoreError>;
