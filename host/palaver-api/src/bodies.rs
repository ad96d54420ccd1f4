//! The bodies of the `/v1/im` API: what each command answers (the service serializes these types) and what
//! each endpoint reads from a JSON body (the gateway parses the body into these types before the command
//! runs). The OpenAPI document derives its schemas from the same types, so schema and code cannot drift.
//!
//! Request fields are all optional here: which are required, and in what range, the command itself checks
//! with a precise reason (`ARGUMENT_REQUIRED`, `BAD_USER_ID`, …); the types fix the names and JSON types, and
//! refuse a field the endpoint does not know.

use palaver_proto::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Derives `Serialize` (responses) or `Deserialize` (requests), and the JSON Schema with feature `schema`.
macro_rules! body {
    (response $(#[$m:meta])* $name:ident { $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub struct $name { $( $(#[$fm])* pub $field: $ty, )* }
    };
    (request $(#[$m:meta])* $name:ident { $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub struct $name { $( $(#[$fm])* #[serde(default)] pub $field: $ty, )* }
    };
}

/// A time as the API shows it: RFC 3339 in UTC with milliseconds, as Tinode does.
pub type Time = Timestamp;

// Friends and blocks.

body!(response
/// A friend request.
FriendRequest {
    id: i64,
    from: String,
    to: String,
    message: Option<String>,
    /// `pending`, `accepted`, `rejected`, `cancelled` or `expired`.
    status: String,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: Time,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    updated: Time,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    handled: Option<Time>,
});
body!(response
    /// `friend.request.create`: the request, and whether this call created it (false: a repeat).
    FriendRequestCreated { request: FriendRequest, created: bool });
body!(response
    /// A decision on a friend request.
    FriendRequestDecided { request: FriendRequest });
body!(response
    /// A page of friend requests.
    FriendRequestPage { requests: Vec<FriendRequest>, next_cursor: Option<i64> });
body!(response
/// A friend.
Friend {
    user: String,
    remark: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    since: Time,
});
body!(response
    /// A page of friends; the cursor is the last user id.
    FriendPage { friends: Vec<Friend>, next_cursor: Option<String> });
body!(response
    /// `friend.delete`.
    FriendDeleted { deleted: bool });
body!(response
    /// `friend.remark`.
    RemarkSet { friend_id: String, remark: Option<String> });
body!(response
/// A blocked user.
Block {
    user: String,
    reason: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    since: Time,
});
body!(response
    /// A page of blocks; the cursor is the last user id.
    BlockPage { blocks: Vec<Block>, next_cursor: Option<String> });
body!(response
    /// `block.create`: whether this call created the block.
    Blocked { blocked: String, created: bool });
body!(response
    /// `block.delete`.
    Unblocked { unblocked: String });

body!(request
    /// `POST /friends/requests`.
    FriendRequestBody { to: Option<String>, message: Option<String> });
body!(request
    /// `PUT /friends/{user}/remark`; no remark clears it.
    RemarkBody { remark: Option<String> });
body!(request
    /// `POST /blocks`.
    BlockBody { user: Option<String>, reason: Option<String> });

// Group governance.

body!(response
/// One member in a page of members.
Member {
    user: String,
    /// `owner`, `admin` or `member`.
    role: String,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    joined: Time,
    /// Tinode access-mode letters.
    mode: String,
    muted: bool,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    muted_until: Option<Time>,
});
body!(response
    /// A page of members; the cursor is the last user id.
    MemberPage { members: Vec<Member>, next_cursor: Option<String>, total: u64 });
body!(response
    /// `group.member.remove`.
    MemberRemoved { removed: String });
body!(response
    /// `group.role.set`.
    RoleSet { user: String, role: String, changed: bool });
body!(response
    /// `group.owner.transfer`.
    OwnerTransferred { owner: String });
body!(response
/// `group.mute.set` and `group.mute.clear`.
MuteSet {
    user: String,
    muted: bool,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<Option<Time>>,
});
body!(response
    /// `group.mute.all`.
    MuteAllSet { all: bool, muted: bool });
body!(response
    /// A group's settings.
    GroupSettings { join_policy: String, members_invite: bool });
body!(response
    /// `group.profile.update`: the group's Tinode `public` after the change.
    ProfileUpdated { topic: String, public: Value });
body!(response
    /// `group.invite`: who was added, the join requests made instead, and who was a member already.
    Invited { added: Vec<String>, pending: Vec<i64>, already_members: Vec<String> });
body!(response
/// A join request.
JoinRequest {
    id: i64,
    topic: String,
    user: String,
    inviter: Option<String>,
    message: Option<String>,
    status: String,
    handled_by: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: Time,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    handled: Option<Time>,
});
body!(response
/// `group.join.request`: joined at once, or a request waiting for an admin.
Joined {
    joined: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<JoinRequest>,
});
body!(response
    /// A page of join requests.
    JoinRequestPage { requests: Vec<JoinRequest>, next_cursor: Option<i64> });
body!(response
    /// A decision on a join request.
    JoinDecided { request: JoinRequest });
body!(response
/// An announcement.
Announcement {
    id: i64,
    topic: String,
    author: String,
    title: Option<String>,
    /// Text or a Drafty document.
    content: Value,
    pinned: bool,
    version: i64,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: Time,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    updated: Time,
});
body!(response
/// An announcement with the caller's read state and the read count.
AnnouncementView {
    #[serde(flatten)]
    announcement: Announcement,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    read: Option<Time>,
    reads: u64,
});
body!(response
    /// `group.announcement.list`.
    AnnouncementList { announcements: Vec<AnnouncementView> });
body!(response
    /// `group.announcement.delete`.
    AnnouncementDeleted { deleted: i64 });
body!(response
    /// `group.announcement.read`: whether this was the caller's first read.
    AnnouncementRead { id: i64, first_read: bool });

body!(request
    /// `PUT /groups/{topic}/members/{user}/role`.
    RoleBody { role: Option<String> });
body!(request
    /// `POST /groups/{topic}/owner`.
    OwnerBody { user: Option<String> });
body!(request
    /// `PUT /groups/{topic}/mutes/{user}`; no duration mutes until lifted.
    MuteBody { duration_ms: Option<i64>, reason: Option<String> });
body!(request
    /// `PUT /groups/{topic}/mute-all`.
    MuteAllBody { muted: Option<bool>, reason: Option<String> });
body!(request
    /// `POST /groups/{topic}/invites`.
    InviteBody { users: Option<Vec<String>>, message: Option<String> });
body!(request
    /// `POST /groups/{topic}/join-requests`.
    JoinBody { message: Option<String> });
body!(request
    /// `PUT /groups/{topic}/settings`.
    SettingsBody { join_policy: Option<String>, members_invite: Option<bool> });
body!(request
/// `POST` and `PUT` of announcements.
AnnouncementBody {
    title: Option<String>,
    /// Text or a Drafty document.
    content: Option<Value>,
    pinned: Option<bool>,
});
body!(request
    /// `PATCH /groups/{topic}/profile`.
    ProfileBody { name: Option<String>, avatar: Option<String>, intro: Option<String> });

// System notifications.

body!(response
/// A system notification.
Notification {
    id: i64,
    kind: String,
    content: Value,
    topic: Option<String>,
    seq: Option<i64>,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    read: Option<Time>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: Time,
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    expires: Option<Time>,
});
body!(response
    /// A page of notifications, newest first, with the unread count.
    NotificationPage { notifications: Vec<Notification>, next_cursor: Option<i64>, unread: u64 });
body!(response
    /// `notification.unread`.
    UnreadCount { unread: u64 });
body!(response
    /// `notification.read`.
    NotificationMarked { id: i64, changed: bool, unread: u64 });
body!(response
    /// `notification.read_all`.
    AllMarked { marked: u64, unread: u64 });

// Abuse reports.

body!(request
/// `POST /reports`: what is reported and why.
ReportBody {
    /// `user`, `message` or `group`.
    target_type: Option<String>,
    /// `usr…` for a user, `grp…` for a group, `{topic}:{seq}` for a message.
    target: Option<String>,
    /// Why, at most 200 characters.
    reason: Option<String>,
    /// More detail, at most 1000 characters.
    note: Option<String>,
});
body!(response
/// How a report was closed.
ReportResolution {
    resolution: String,
    note: Option<String>,
    /// Who closed it (`{actor kind}:{actor id}`).
    by: String,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    at: Time,
});
body!(response
/// An abuse report.
Report {
    id: i64,
    reporter: String,
    /// `user`, `message` or `group`.
    target_type: String,
    target: String,
    reason: String,
    note: Option<String>,
    /// `open` or `resolved`.
    status: String,
    resolution: Option<ReportResolution>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    created: Time,
});
body!(response
    /// `report.create`: the stored report.
    ReportCreated { report: Report });
body!(response
    /// A page of reports, newest first (the admin API's `GET …/reports`).
    ReportPage { reports: Vec<Report>, next_cursor: Option<i64> });

pub mod admin;
