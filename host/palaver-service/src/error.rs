//! Service errors and the one stable table that maps each of them to a Tinode ctrl code.

use palaver_core::StoreError;
use palaver_proto::Code;

/// Why a request was refused. Each variant maps to exactly one ctrl code in [`ServiceError::code`].
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ServiceError {
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("authentication required")]
    AuthRequired,
    #[error("authentication failed")]
    AuthFailed,
    #[error("unknown authentication scheme")]
    UnknownScheme,
    #[error("permission denied")]
    PermissionDenied,
    #[error("topic not found")]
    TopicNotFound,
    #[error("user not found")]
    UserNotFound,
    #[error("not found")]
    NotFound,
    #[error("operation not allowed")]
    NotAllowed,
    #[error("already authenticated")]
    AlreadyAuthenticated,
    #[error("must attach first")]
    MustAttach,
    #[error("already exists")]
    AlreadyExists,
    #[error("command out of sequence")]
    OutOfSequence,
    #[error("duplicate credential")]
    DuplicateCredential,
    #[error("too large: {0}")]
    TooLarge(String),
    #[error("policy violation: {0}")]
    Policy(String),
    #[error("too many requests")]
    TooManyRequests,
    #[error("not implemented")]
    NotImplemented,
    #[error("version not supported")]
    VersionNotSupported,
    /// A dependency is down or a retry is in progress; the client should retry after `retry_after_ms`.
    #[error("service unavailable: {reason}")]
    Unavailable { reason: String, retry_after_ms: u64 },
    /// A publish hook (content moderation) refused the message.
    #[error("rejected ({code:?}): {reason}")]
    Rejected { code: Code, reason: String },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServiceError {
    /// The ctrl code this error is answered with.
    pub fn code(&self) -> Code {
        use ServiceError::*;
        match self {
            Malformed(_) => Code::Malformed,
            AuthRequired => Code::AuthRequired,
            AuthFailed => Code::AuthFailed,
            UnknownScheme => Code::UnknownAuthScheme,
            PermissionDenied => Code::PermissionDenied,
            TopicNotFound => Code::TopicNotFound,
            UserNotFound => Code::UserNotFound,
            NotFound => Code::NotFound,
            NotAllowed => Code::OperationNotAllowed,
            AlreadyAuthenticated => Code::AlreadyAuthenticated,
            MustAttach => Code::MustAttachFirst,
            AlreadyExists => Code::AlreadyExists,
            OutOfSequence => Code::CommandOutOfSequence,
            DuplicateCredential => Code::DuplicateCredential,
            TooLarge(_) => Code::TooLarge,
            Policy(_) => Code::PolicyViolation,
            TooManyRequests => Code::TooManyRequests,
            NotImplemented => Code::NotImplemented,
            VersionNotSupported => Code::VersionNotSupported,
            Unavailable { .. } => Code::ServiceUnavailable,
            Rejected { code, .. } => *code,
            Internal(_) => Code::InternalError,
        }
    }

    /// The text sent to the client: the canonical one, or a more precise one where it helps and leaks nothing.
    pub fn text(&self) -> String {
        match self {
            ServiceError::Malformed(why) | ServiceError::TooLarge(why) | ServiceError::Policy(why) => {
                format!("{}: {why}", self.code().text())
            }
            ServiceError::Rejected { reason, .. } => reason.clone(),
            _ => self.code().text().to_owned(),
        }
    }

    /// Extra ctrl params (a retry hint for 503).
    pub fn params(&self) -> Option<serde_json::Value> {
        match self {
            ServiceError::Unavailable { retry_after_ms, .. } => {
                Some(serde_json::json!({ "retry_after_ms": retry_after_ms }))
            }
            _ => None,
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ServiceError::NotFound,
            StoreError::Conflict(_) => ServiceError::AlreadyExists,
            StoreError::Unavailable(reason) => ServiceError::Unavailable { reason, retry_after_ms: 1000 },
            StoreError::Internal(why) => ServiceError::Internal(why),
        }
    }
}

/// The result of a handler.
pub type ServiceResult<T> = Result<T, ServiceError>;
