//! Service errors and the one stable table that maps each of them to a Tinode ctrl code.

use palaver_api::Reason;
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
    /// A credential's value is not an address of its method, or the method is not enabled (ctrl params `what`).
    #[error("malformed credential: {method}")]
    BadCredential { method: String },
    /// Sign-up named no credential of these required methods (ctrl params `creds`).
    #[error("credentials required: {0:?}")]
    CredentialsRequired(Vec<String>),
    /// A confirmation code that does not match (406).
    #[error("invalid response")]
    InvalidResponse,
    /// The pending code expired or its attempts are used up; a new one was sent.
    #[error("the code expired or was used up")]
    CodeExpired,
    /// Removing the account's only confirmed credential of a required method.
    #[error("the last confirmed credential of a required method")]
    LastCredential,
    #[error("too large: {0}")]
    TooLarge(String),
    #[error("policy violation: {0}")]
    Policy(String),
    #[error("too many requests")]
    TooManyRequests,
    /// Too many failed logins for the login or the client address; retry after `retry_after_ms`.
    #[error("too many failed logins")]
    LoginThrottled { retry_after_ms: u64 },
    /// Over a request rate; retry after `retry_after_ms`.
    #[error("too many requests: {why}")]
    RateLimited { why: String, retry_after_ms: u64 },
    /// Refused for a reason the client should read (403 with a precise text).
    #[error("permission denied: {0}")]
    Denied(String),
    #[error("not implemented")]
    NotImplemented,
    /// A party of a new call is in another call (ctrl 486).
    #[error("busy here")]
    Busy,
    /// The file was taken down (HTTP 451).
    #[error("file unavailable for legal reasons")]
    FileBlocked,
    /// The file is being scanned and only its uploader reads it until then (HTTP 503 with `Retry-After`).
    #[error("the file is being scanned")]
    FilePending,
    /// A download's range lies outside the file of `size` bytes (HTTP 416).
    #[error("range not satisfiable")]
    RangeNotSatisfiable { size: u64 },
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
    /// The stable reason of the refusal (`palaver_api::Reason`): the one table every error maps into, for the
    /// HTTP APIs' `reason` and, through it, the ctrl code.
    pub fn reason(&self) -> Reason {
        use ServiceError::*;
        match self {
            Malformed(_) => Reason::Malformed,
            AuthRequired => Reason::AuthRequired,
            AuthFailed => Reason::AuthFailed,
            UnknownScheme => Reason::UnknownAuthScheme,
            PermissionDenied | Denied(_) => Reason::PermissionDenied,
            TopicNotFound => Reason::TopicNotFound,
            UserNotFound => Reason::UserNotFound,
            NotFound => Reason::NotFound,
            NotAllowed => Reason::NotAllowed,
            AlreadyAuthenticated => Reason::AlreadyAuthenticated,
            MustAttach => Reason::MustAttach,
            AlreadyExists => Reason::AlreadyExists,
            OutOfSequence => Reason::OutOfSequence,
            DuplicateCredential => Reason::DuplicateCredential,
            BadCredential { .. } => Reason::BadCredential,
            CredentialsRequired(_) => Reason::CredentialsRequired,
            InvalidResponse => Reason::InvalidResponse,
            CodeExpired => Reason::CodeExpired,
            LastCredential => Reason::LastCredential,
            TooLarge(_) => Reason::TooLarge,
            Policy(_) => Reason::PolicyViolation,
            TooManyRequests | RateLimited { .. } => Reason::RateLimited,
            LoginThrottled { .. } => Reason::LoginThrottled,
            NotImplemented => Reason::NotImplemented,
            Busy => Reason::Busy,
            FileBlocked => Reason::FileBlocked,
            FilePending => Reason::FilePending,
            RangeNotSatisfiable { .. } => Reason::RangeNotSatisfiable,
            VersionNotSupported => Reason::VersionNotSupported,
            Unavailable { .. } => Reason::Unavailable,
            // A business refusal of the publish gate carries a table reason; a content filter's is free text.
            Rejected { reason, .. } => Reason::parse(reason).unwrap_or(Reason::ContentRejected),
            Internal(_) => Reason::Internal,
        }
    }

    /// The ctrl code this error is answered with: the reason's, except that a publish hook chooses its own.
    pub fn code(&self) -> Code {
        match self {
            ServiceError::Rejected { code, .. } => *code,
            e => e.reason().code(),
        }
    }

    /// The text sent to the client: the canonical one, or a more precise one where it helps and leaks nothing.
    pub fn text(&self) -> String {
        match self {
            ServiceError::Malformed(why)
            | ServiceError::TooLarge(why)
            | ServiceError::Policy(why)
            | ServiceError::Denied(why)
            | ServiceError::RateLimited { why, .. } => format!("{}: {why}", self.code().text()),
            ServiceError::LoginThrottled { .. } => "too many failed logins: retry later".to_owned(),
            ServiceError::CodeExpired => {
                "policy violation: the code expired or was used up; a new one was sent".to_owned()
            }
            ServiceError::LastCredential => {
                "policy violation: the only confirmed credential of a required method stays".to_owned()
            }
            ServiceError::CredentialsRequired(_) => "policy violation: required credentials missing".to_owned(),
            ServiceError::Rejected { reason, .. } => reason.clone(),
            _ => self.code().text().to_owned(),
        }
    }

    /// Extra ctrl params (a retry hint for 503 and 429).
    pub fn params(&self) -> Option<serde_json::Value> {
        match self {
            ServiceError::Unavailable { retry_after_ms, .. }
            | ServiceError::LoginThrottled { retry_after_ms }
            | ServiceError::RateLimited { retry_after_ms, .. } => {
                Some(serde_json::json!({ "retry_after_ms": retry_after_ms }))
            }
            // Tinode's keys: `what` names the offending method, `creds` the missing ones.
            ServiceError::BadCredential { method } => Some(serde_json::json!({ "what": method })),
            ServiceError::CredentialsRequired(methods) => Some(serde_json::json!({ "creds": methods })),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The ctrl codes Tinode clients already see, unchanged by deriving them from the reasons table.
    #[test]
    fn ctrl_codes_stay_what_clients_know() {
        let s = String::new;
        let cases = [
            (ServiceError::Malformed(s()), Code::Malformed),
            (ServiceError::AuthRequired, Code::AuthRequired),
            (ServiceError::AuthFailed, Code::AuthFailed),
            (ServiceError::UnknownScheme, Code::UnknownAuthScheme),
            (ServiceError::PermissionDenied, Code::PermissionDenied),
            (ServiceError::TopicNotFound, Code::TopicNotFound),
            (ServiceError::UserNotFound, Code::UserNotFound),
            (ServiceError::NotFound, Code::NotFound),
            (ServiceError::NotAllowed, Code::OperationNotAllowed),
            (ServiceError::AlreadyAuthenticated, Code::AlreadyAuthenticated),
            (ServiceError::MustAttach, Code::MustAttachFirst),
            (ServiceError::AlreadyExists, Code::AlreadyExists),
            (ServiceError::OutOfSequence, Code::CommandOutOfSequence),
            (ServiceError::DuplicateCredential, Code::DuplicateCredential),
            (ServiceError::BadCredential { method: s() }, Code::Malformed),
            (ServiceError::CredentialsRequired(vec![]), Code::PolicyViolation),
            (ServiceError::InvalidResponse, Code::InvalidResponse),
            (ServiceError::CodeExpired, Code::PolicyViolation),
            (ServiceError::LastCredential, Code::PolicyViolation),
            (ServiceError::TooLarge(s()), Code::TooLarge),
            (ServiceError::Policy(s()), Code::PolicyViolation),
            (ServiceError::TooManyRequests, Code::TooManyRequests),
            (ServiceError::LoginThrottled { retry_after_ms: 1 }, Code::TooManyRequests),
            (ServiceError::RateLimited { why: s(), retry_after_ms: 1 }, Code::TooManyRequests),
            (ServiceError::Denied(s()), Code::PermissionDenied),
            (ServiceError::NotImplemented, Code::NotImplemented),
            (ServiceError::Busy, Code::Busy),
            (ServiceError::FileBlocked, Code::UnavailableForLegalReasons),
            (ServiceError::FilePending, Code::ServiceUnavailable),
            (ServiceError::RangeNotSatisfiable { size: 1 }, Code::RangeNotSatisfiable),
            (ServiceError::VersionNotSupported, Code::VersionNotSupported),
            (ServiceError::Unavailable { reason: s(), retry_after_ms: 1 }, Code::ServiceUnavailable),
            (ServiceError::Rejected { code: Code::TooLarge, reason: "too long".into() }, Code::TooLarge),
            (ServiceError::Internal(s()), Code::InternalError),
        ];
        for (e, code) in cases {
            assert_eq!(e.code(), code, "{e:?}");
        }
        let muted = ServiceError::Rejected { code: Code::PermissionDenied, reason: "GROUP_MUTED".into() };
        assert_eq!(muted.reason(), Reason::GroupMuted);
        let filtered = ServiceError::Rejected { code: Code::PolicyViolation, reason: "blocked word".into() };
        assert_eq!(filtered.reason(), Reason::ContentRejected);
    }
}
