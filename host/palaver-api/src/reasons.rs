//! The one table of reasons: every stable upper-case `reason` a client can see, with its ctrl code (whose
//! number is also the HTTP status) and one line of documentation. `docs/reasons.md` is rendered from it.
//!
//! A new reason is one line in [`reasons!`] below; a test fails until `docs/reasons.md` is re-rendered
//! (`PALAVER_BLESS=1 cargo test -p palaver-api`).

use palaver_proto::Code;
use std::fmt;

/// Declares [`Reason`] and its table: `Variant = "NAME", CtrlCode, "doc line";`.
macro_rules! reasons {
    ($( $variant:ident = $name:literal, $code:ident, $doc:literal; )*) => {
        /// A stable reason a refusal is given with. Its name never changes once published.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $( #[doc = $doc] $variant, )*
        }

        impl Reason {
            /// Every reason, in table order.
            pub const ALL: &'static [Reason] = &[$( Reason::$variant, )*];

            /// The stable upper-case name clients match on.
            pub const fn name(self) -> &'static str {
                match self { $( Reason::$variant => $name, )* }
            }

            /// The Tinode ctrl code a refusal with this reason carries.
            pub const fn code(self) -> Code {
                match self { $( Reason::$variant => Code::$code, )* }
            }

            /// One line for people: when this reason is given.
            pub const fn doc(self) -> &'static str {
                match self { $( Reason::$variant => $doc, )* }
            }
        }
    };
}

reasons! {
    // The HTTP gateway: routing, authentication, bodies.
    NoRoute = "NO_ROUTE", NotFound, "No endpoint at this path (see `/v1/openapi.json`).";
    MethodNotAllowed = "METHOD_NOT_ALLOWED", OperationNotAllowed, "The path exists under another HTTP method.";
    ApiKeyRequired = "API_KEY_REQUIRED", ApiKeyRequired, "No valid tenant API key (`X-Tinode-APIKey`).";
    TokenRequired = "TOKEN_REQUIRED", AuthRequired, "No login token (`Authorization: Token …`).";
    TokenInvalid = "TOKEN_INVALID", AuthFailed, "The login token is invalid, expired or revoked.";
    AdminTokenRequired = "ADMIN_TOKEN_REQUIRED", AuthRequired, "The admin API needs `Authorization: Bearer <admin token>`.";
    AdminApiOff = "ADMIN_API_OFF", NotFound, "This node serves no admin API (no admin token configured).";
    RateLimited = "RATE_LIMITED", TooManyRequests, "Over a request rate; retry after the hinted delay.";
    LoginThrottled = "LOGIN_THROTTLED", TooManyRequests, "Too many failed logins for this login or address; retry later.";
    BodyTooLarge = "BODY_TOO_LARGE", TooLarge, "The request body exceeds the API's limit.";
    BadJson = "BAD_JSON", Malformed, "The request body is not a JSON object.";
    // Generic outcomes of the service and the stores.
    Malformed = "MALFORMED", Malformed, "The request is malformed.";
    AuthRequired = "AUTH_REQUIRED", AuthRequired, "Log in first.";
    AuthFailed = "AUTH_FAILED", AuthFailed, "The credentials were refused.";
    UnknownAuthScheme = "UNKNOWN_AUTH_SCHEME", UnknownAuthScheme, "The authentication scheme is not supported.";
    PermissionDenied = "PERMISSION_DENIED", PermissionDenied, "The caller may not do this.";
    NotFound = "NOT_FOUND", NotFound, "No such record.";
    TopicNotFound = "TOPIC_NOT_FOUND", TopicNotFound, "No such topic.";
    UserNotFound = "USER_NOT_FOUND", UserNotFound, "No such user, or the account is not active.";
    NotAllowed = "NOT_ALLOWED", OperationNotAllowed, "The operation is not allowed on this target.";
    AlreadyAuthenticated = "ALREADY_AUTHENTICATED", AlreadyAuthenticated, "The session is logged in already.";
    MustAttach = "MUST_ATTACH", MustAttachFirst, "Attach to the topic (`{sub}`) first.";
    AlreadyExists = "ALREADY_EXISTS", AlreadyExists, "The record exists already.";
    Conflict = "CONFLICT", AlreadyExists, "The change conflicts with the stored state.";
    OutOfSequence = "OUT_OF_SEQUENCE", CommandOutOfSequence, "The request came out of order (such as before `{hi}`).";
    DuplicateCredential = "DUPLICATE_CREDENTIAL", DuplicateCredential, "The login or credential is taken.";
    BadCredential = "BAD_CREDENTIAL", Malformed, "A credential is not a valid address for its method, or the method is not enabled (params `what`).";
    CredentialsRequired = "CREDENTIALS_REQUIRED", PolicyViolation, "Sign-up must name a credential of each required method (params `creds`).";
    InvalidResponse = "INVALID_RESPONSE", InvalidResponse, "The confirmation code does not match.";
    CodeExpired = "CODE_EXPIRED", PolicyViolation, "The code expired or its attempts are used up; a new code was sent.";
    LastCredential = "LAST_CREDENTIAL", PolicyViolation, "The only confirmed credential of a required method cannot be removed.";
    TooLarge = "TOO_LARGE", TooLarge, "A value is larger than allowed.";
    PolicyViolation = "POLICY_VIOLATION", PolicyViolation, "A tenant policy refuses the request.";
    ContentRejected = "CONTENT_REJECTED", PolicyViolation, "A content filter refused the message (the ctrl text says why).";
    NotImplemented = "NOT_IMPLEMENTED", NotImplemented, "The server does not implement this.";
    Busy = "BUSY", Busy, "A party of the call is in another call already.";
    FileBlocked = "FILE_BLOCKED", UnavailableForLegalReasons, "The file was taken down (by a scan or an operator).";
    FilePending = "FILE_PENDING", ServiceUnavailable, "The file is being scanned; retry after the hinted delay.";
    RangeNotSatisfiable = "RANGE_NOT_SATISFIABLE", RangeNotSatisfiable, "The requested byte range lies outside the file.";
    VersionNotSupported = "VERSION_NOT_SUPPORTED", VersionNotSupported, "The client's protocol version is not supported.";
    Unavailable = "UNAVAILABLE", ServiceUnavailable, "A dependency is down; retry after the hinted delay.";
    Internal = "INTERNAL", InternalError, "An internal fault (logged on the server).";
    // Business commands: what the host guarantees.
    CommandNotAvailable = "COMMAND_NOT_AVAILABLE", NotFound, "The command is off for this tenant: no plugin holds its rules.";
    UnknownCommand = "UNKNOWN_COMMAND", NotFound, "No command of this name.";
    PluginUnavailable = "PLUGIN_UNAVAILABLE", ServiceUnavailable, "The plugin holding the rules failed; the command fails closed.";
    FactsInvalid = "FACTS_INVALID", InternalError, "A plugin could not read the facts the host sent (host and plugin disagree).";
    RuleRefused = "RULE_REFUSED", PolicyViolation, "The tenant's rules refused with a reason outside this table (the message names it).";
    ArgumentRequired = "ARGUMENT_REQUIRED", Malformed, "A required argument is missing.";
    BadArgument = "BAD_ARGUMENT", Malformed, "An argument has the wrong type (such as a boolean that is not true/false).";
    BadUserId = "BAD_USER_ID", Malformed, "An argument is not a user id (`usr…`).";
    BadId = "BAD_ID", Malformed, "An id argument is not a positive integer.";
    BadLimit = "BAD_LIMIT", Malformed, "`limit` is out of range.";
    BadBox = "BAD_BOX", Malformed, "`box` is neither `incoming` nor `outgoing`.";
    BadStatus = "BAD_STATUS", Malformed, "Unknown request status.";
    BadRole = "BAD_ROLE", Malformed, "Unknown group role.";
    BadPolicy = "BAD_POLICY", Malformed, "Unknown join policy (open, approval, closed).";
    BadDuration = "BAD_DURATION", Malformed, "`duration_ms` is not a positive number of milliseconds.";
    BadUsers = "BAD_USERS", Malformed, "`users` must list 1–50 user ids.";
    BadKind = "BAD_KIND", Malformed, "A notification kind is 1–32 bytes.";
    UseTransfer = "USE_TRANSFER", Malformed, "Ownership moves only by `POST /groups/{topic}/owner`.";
    NothingToChange = "NOTHING_TO_CHANGE", Malformed, "The request changes nothing.";
    SelfTarget = "SELF", Malformed, "The command cannot target the caller.";
    ContentTooLarge = "CONTENT_TOO_LARGE", TooLarge, "Notification content is too large.";
    AnnouncementTooLarge = "ANNOUNCEMENT_TOO_LARGE", TooLarge, "An announcement is longer than allowed.";
    TitleTooLong = "TITLE_TOO_LONG", TooLarge, "An announcement title is longer than 255 characters.";
    GroupNotFound = "GROUP_NOT_FOUND", NotFound, "No such group.";
    RequestNotFound = "REQUEST_NOT_FOUND", NotFound, "No such friend or join request.";
    AnnouncementNotFound = "ANNOUNCEMENT_NOT_FOUND", NotFound, "No such announcement.";
    NotificationNotFound = "NOTIFICATION_NOT_FOUND", NotFound, "No such notification of the caller's.";
    NotFriends = "NOT_FRIENDS", NotFound, "The user is not the caller's friend.";
    NotBlocked = "NOT_BLOCKED", NotFound, "The caller does not block that user.";
    NotMuted = "NOT_MUTED", NotFound, "The member is not muted.";
    TargetNotMember = "TARGET_NOT_MEMBER", NotFound, "The user named is not a member of the group.";
    NotMember = "NOT_MEMBER", PermissionDenied, "The caller is not a member of the group.";
    RequestNotYours = "REQUEST_NOT_YOURS", PermissionDenied, "Only the other side of the request can decide it.";
    RequestNotPending = "REQUEST_NOT_PENDING", AlreadyExists, "The request was decided already.";
    AlreadyFriends = "ALREADY_FRIENDS", AlreadyExists, "The two users are friends already.";
    AlreadyMember = "ALREADY_MEMBER", AlreadyExists, "The caller is a member already.";
    AdminLimit = "ADMIN_LIMIT", AlreadyExists, "The group has as many admins as the tenant allows.";
    GroupFull = "GROUP_FULL", AlreadyExists, "The group has as many members as it may.";
    TooManyGroups = "TOO_MANY_GROUPS", AlreadyExists, "The user belongs to as many groups as allowed.";
    Blocked = "BLOCKED", PermissionDenied, "A block between the two users stops this (friend request or P2P message).";
    OwnerProtected = "OWNER_PROTECTED", PermissionDenied, "The owner cannot be removed, muted or given another role.";
    NotOwner = "NOT_OWNER", PermissionDenied, "Only the owner can hand the group over.";
    MemberRemoved = "MEMBER_REMOVED", PermissionDenied, "An admin removed the user; only an admin can bring them back.";
    GroupClosed = "GROUP_CLOSED", PermissionDenied, "The group takes no join requests.";
    GroupMuted = "GROUP_MUTED", PermissionDenied, "The sender is muted in the group (ctrl 403 on `{pub}`).";
    // Business commands: what the plugins' rules decide.
    FriendshipRequired = "FRIENDSHIP_REQUIRED", PermissionDenied, "The tenant lets only friends message each other.";
    FriendRequestLimit = "FRIEND_REQUEST_LIMIT", TooManyRequests, "The daily friend-request limit is reached.";
    MessageTooLong = "MESSAGE_TOO_LONG", Malformed, "A friend request's message is too long.";
    RemarkTooLong = "REMARK_TOO_LONG", Malformed, "A remark is too long.";
    AdminRequired = "ADMIN_REQUIRED", PermissionDenied, "Only the owner and admins can do this.";
    OwnerRequired = "OWNER_REQUIRED", PermissionDenied, "Only the owner can do this.";
    InviteNotAllowed = "INVITE_NOT_ALLOWED", PermissionDenied, "Plain members may not invite in this group.";
    MuteTooLong = "MUTE_TOO_LONG", Malformed, "The mute is longer than the tenant allows.";
    NameTooLong = "NAME_TOO_LONG", Malformed, "A group name is too long.";
    IntroTooLong = "INTRO_TOO_LONG", Malformed, "A group intro is too long.";
    // The admin API.
    BadTenant = "BAD_TENANT", Malformed, "The tenant in the path is not a number.";
    BadSeq = "BAD_SEQ", Malformed, "The seq in the path is not a number.";
    BadDevice = "BAD_DEVICE", Malformed, "`device` must be a string of 1–128 bytes.";
    BadAction = "BAD_ACTION", Malformed, "`action` must be `release` or `reject` (`recall` too in `message.moderate`).";
    BadCursor = "BAD_CURSOR", Malformed, "`cursor` is not a positive integer.";
    MessageNotFound = "MESSAGE_NOT_FOUND", NotFound, "No such message.";
    MessageNotHeld = "MESSAGE_NOT_HELD", AlreadyExists, "The message is not held for review.";
    PluginActionFailed = "PLUGIN_ACTION_FAILED", AlreadyExists, "A plugin admin action failed; the running version is kept.";
    BadUpload = "BAD_UPLOAD", Malformed, "A plugin upload is not a multipart form with a `manifest` (TOML) and a `component` (.wasm), or its manifest does not parse.";
    UploadTooLarge = "UPLOAD_TOO_LARGE", TooLarge, "A plugin upload is larger than `plugins.max_upload_bytes`.";
    SignatureInvalid = "SIGNATURE_INVALID", PermissionDenied, "Trusted keys are configured and the upload carries no signature by one of them over its manifest and component.";
    ReleaseRefused = "RELEASE_REFUSED", PolicyViolation, "The load gate refused the release (compile, grants, world, settings or fixtures); nothing was stored or changed.";
    ReleaseConflict = "RELEASE_CONFLICT", AlreadyExists, "This plugin version was uploaded before with another component: a released version is immutable.";
    ReleaseNotFound = "RELEASE_NOT_FOUND", NotFound, "The rollout names a version of the plugin that was never uploaded.";
    PluginsOff = "PLUGINS_OFF", NotFound, "This node runs no plugins (`plugins.dir` is not set).";
    // Admin commands (`POST …/commands`, the queue's `im.admin.command`) and their result records.
    MalformedCommand = "MALFORMED_COMMAND", Malformed, "The command is not a JSON object of the documented shape.";
    UnknownType = "UNKNOWN_TYPE", Malformed, "No admin command of this `type`.";
    UnknownTenant = "UNKNOWN_TENANT", Malformed, "The command names no tenant, or one that does not exist.";
    BadCommandId = "BAD_COMMAND_ID", Malformed, "A command id (`Idempotency-Key` or `command_id`) is 1–128 bytes.";
    CommandNotFound = "COMMAND_NOT_FOUND", NotFound, "No finished command with this id.";
    CommandRunning = "COMMAND_RUNNING", AlreadyExists, "Another node is running the command; ask again for its result.";
    RetriesExhausted = "RETRIES_EXHAUSTED", ServiceUnavailable, "The command failed transiently on every attempt and went to the dead-letter topic.";
    ResultLost = "RESULT_LOST", InternalError, "A final command's stored result is unreadable.";
    BadPassword = "BAD_PASSWORD", Malformed, "The new password breaks the password rules.";
    NoPasswordLogin = "NO_PASSWORD_LOGIN", NotFound, "The user has no password login to reset.";
    NotHeld = "NOT_HELD", AlreadyExists, "The message is not held for review (`message.moderate`).";
    FileNotFound = "FILE_NOT_FOUND", NotFound, "No uploaded file has this id (`file.audit.update`).";
    BadFileStatus = "BAD_FILE_STATUS", Malformed, "`status` must be `clean`, `pending` or `blocked` (`file.audit.update`).";
    BadReport = "BAD_REPORT", Malformed, "`payload.report` is not a report id.";
    BadResolution = "BAD_RESOLUTION", Malformed, "`payload.resolution` is longer than 64 bytes.";
    ReportNotFound = "REPORT_NOT_FOUND", NotFound, "No such report.";
    ReportClosed = "REPORT_CLOSED", AlreadyExists, "The report is resolved already.";
    // Abuse reports (`POST /v1/im/reports`).
    BadTargetType = "BAD_TARGET_TYPE", Malformed, "`target_type` is not `user`, `message` or `group`.";
    BadTarget = "BAD_TARGET", Malformed, "`target` does not have its type's form (`usr…`, `grp…`, `{topic}:{seq}`).";
    ReasonTooLong = "REASON_TOO_LONG", Malformed, "A report's `reason` is longer than 200 characters.";
    NoteTooLong = "NOTE_TOO_LONG", Malformed, "A report's `note` is longer than 1000 characters.";
    ReportLimit = "REPORT_LIMIT", TooManyRequests, "The user filed as many reports this hour as the tenant allows.";
    TargetNotFound = "TARGET_NOT_FOUND", NotFound, "The reported user, group or message does not exist (or the reporter cannot see it).";
}

impl Reason {
    /// The HTTP status a refusal with this reason is answered with: the ctrl code's number.
    pub fn status(self) -> u16 {
        self.code().code()
    }

    /// The reason of this name, if it is in the table.
    pub fn parse(name: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// The reference page (`docs/reasons.md`), rendered from the table.
    pub fn reference() -> String {
        let mut out = String::from(
            "# Reasons\n\nEvery refusal a client can see carries one of these stable names: the HTTP APIs in the \
             body's `reason` (`{\"code\": <status>, \"reason\": \"…\", \"message\": \"…\"}`), the business \
             `{ctrl}` refusals of the socket in their text. The HTTP status is always the ctrl code's number. \
             Rendered from `palaver_api::Reason` (`host/palaver-api/src/reasons.rs`); a test fails when they \
             differ.\n\n| reason | status | ctrl text | when |\n| --- | --- | --- | --- |\n",
        );
        for r in Reason::ALL {
            out.push_str(&format!("| `{}` | {} | {} | {} |\n", r.name(), r.status(), r.code().text(), r.doc()));
        }
        out
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Reason, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Reason::parse(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown reason {name}")))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Reason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Reason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "A stable reason from the reasons table (docs/reasons.md)."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_upper_case_and_refusals() {
        for (i, a) in Reason::ALL.iter().enumerate() {
            assert!(a.name().bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{a}");
            assert!((400..600).contains(&a.status()), "{a} is not a refusal");
            assert!(!a.doc().is_empty());
            assert_eq!(Reason::parse(a.name()), Some(*a));
            for b in &Reason::ALL[i + 1..] {
                assert_ne!(a.name(), b.name(), "{a:?} and {b:?} share a name");
            }
        }
        assert_eq!(Reason::parse("NO_SUCH_REASON"), None);
    }

    #[test]
    fn reasons_travel_as_their_names() {
        let v = serde_json::to_value(Reason::GroupMuted).unwrap();
        assert_eq!(v, "GROUP_MUTED");
        assert_eq!(serde_json::from_value::<Reason>(v).unwrap(), Reason::GroupMuted);
        assert!(serde_json::from_value::<Reason>("NOPE".into()).is_err());
    }

    /// The reference page is the table: re-render it with `PALAVER_BLESS=1`.
    #[test]
    fn the_reasons_reference_is_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/reasons.md");
        let want = Reason::reference();
        if std::env::var_os("PALAVER_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/reasons.md differs from palaver_api::Reason; run PALAVER_BLESS=1 cargo test -p palaver-api"
        );
    }
}
