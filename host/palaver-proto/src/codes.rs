//! The one table of ctrl codes and their texts. Every error a client can see maps to exactly one row here,
//! so the wording stays what Tinode clients already know.

/// A ctrl reply: its numeric code and its canonical text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    Ok,
    Created,
    Accepted,
    NoContent,
    Evicted,
    ServerShutdown,
    Delivered,
    ValidateCredentials,
    AuthReset,
    AlreadySubscribed,
    NotJoined,
    NotModified,
    Malformed,
    AuthRequired,
    AuthFailed,
    UnknownAuthScheme,
    PermissionDenied,
    ApiKeyRequired,
    InvalidSession,
    TopicNotFound,
    UserNotFound,
    NotFound,
    OperationNotAllowed,
    InvalidResponse,
    AlreadyAuthenticated,
    MustAttachFirst,
    AlreadyExists,
    CommandOutOfSequence,
    DuplicateCredential,
    TooLarge,
    RangeNotSatisfiable,
    PolicyViolation,
    TooManyRequests,
    UnavailableForLegalReasons,
    Busy,
    InternalError,
    NotImplemented,
    ServiceUnavailable,
    VersionNotSupported,
}

impl Code {
    /// The numeric ctrl code.
    pub fn code(self) -> u16 {
        use Code::*;
        match self {
            Ok => 200,
            Created => 201,
            Accepted => 202,
            NoContent => 204,
            Evicted | ServerShutdown => 205,
            Delivered => 208,
            ValidateCredentials => 300,
            AuthReset => 301,
            AlreadySubscribed | NotJoined | NotModified => 304,
            Malformed => 400,
            AuthRequired | AuthFailed | UnknownAuthScheme => 401,
            PermissionDenied | ApiKeyRequired | InvalidSession => 403,
            TopicNotFound | UserNotFound | NotFound => 404,
            OperationNotAllowed => 405,
            InvalidResponse => 406,
            AlreadyAuthenticated | MustAttachFirst | AlreadyExists | CommandOutOfSequence | DuplicateCredential => 409,
            TooLarge => 413,
            RangeNotSatisfiable => 416,
            PolicyViolation => 422,
            TooManyRequests => 429,
            UnavailableForLegalReasons => 451,
            Busy => 486,
            InternalError => 500,
            NotImplemented => 501,
            ServiceUnavailable => 503,
            VersionNotSupported => 505,
        }
    }

    /// The canonical text, as Tinode words it.
    pub fn text(self) -> &'static str {
        use Code::*;
        match self {
            Ok => "ok",
            Created => "created",
            Accepted => "accepted",
            NoContent => "no content",
            Evicted => "evicted",
            ServerShutdown => "server shutdown",
            Delivered => "delivered",
            ValidateCredentials => "validate credentials",
            AuthReset => "auth reset",
            AlreadySubscribed => "already subscribed",
            NotJoined => "not joined",
            NotModified => "not modified",
            Malformed => "malformed",
            AuthRequired => "authentication required",
            AuthFailed => "authentication failed",
            UnknownAuthScheme => "unknown authentication scheme",
            PermissionDenied => "permission denied",
            ApiKeyRequired => "valid API key required",
            InvalidSession => "invalid or expired session",
            TopicNotFound => "topic not found",
            UserNotFound => "user not found",
            NotFound => "not found",
            OperationNotAllowed => "operation or method not allowed",
            InvalidResponse => "invalid response",
            AlreadyAuthenticated => "already authenticated",
            MustAttachFirst => "must attach first",
            AlreadyExists => "already exists",
            CommandOutOfSequence => "command out of sequence",
            DuplicateCredential => "duplicate credential",
            TooLarge => "too large",
            RangeNotSatisfiable => "range not satisfiable",
            PolicyViolation => "policy violation",
            TooManyRequests => "too many requests",
            UnavailableForLegalReasons => "unavailable for legal reasons",
            Busy => "busy here",
            InternalError => "internal error",
            NotImplemented => "not implemented",
            ServiceUnavailable => "service unavailable",
            VersionNotSupported => "version not supported",
        }
    }

    /// The canonical code for a number that a plugin or policy chose. Numbers without a row here become
    /// 422 (policy violation), so a plugin can never make the server send a success code for a refusal.
    pub fn from_number(n: u16) -> Code {
        match n {
            400 => Code::Malformed,
            401 => Code::AuthRequired,
            403 => Code::PermissionDenied,
            404 => Code::NotFound,
            405 => Code::OperationNotAllowed,
            409 => Code::AlreadyExists,
            413 => Code::TooLarge,
            429 => Code::TooManyRequests,
            503 => Code::ServiceUnavailable,
            _ => Code::PolicyViolation,
        }
    }

    /// True for the codes that `tinode-sdk` resolves a request promise with (200–399).
    pub fn is_success(self) -> bool {
        (200..400).contains(&self.code())
    }
}
