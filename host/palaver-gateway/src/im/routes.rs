//! The route table of the `/v1/im/` API: one entry per endpoint, naming the business command it runs. The
//! router and the OpenAPI document are both read from this table, and a test drives every entry through the
//! router, so the two cannot drift apart.

use palaver_api::CommandName;
use palaver_api::CommandName as C;
use palaver_api::bodies as b;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The JSON Schema of a body type, registered in the document's components.
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// What an endpoint reads from its JSON body: the type's schema, and a check that a body parses as that type.
#[derive(Clone, Copy)]
pub(crate) struct RequestBody {
    pub(crate) schema: SchemaFn,
    pub(crate) check: fn(&Map<String, Value>) -> Result<(), String>,
}

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestBody")
    }
}

pub(crate) fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

fn check<T: DeserializeOwned>(body: &Map<String, Value>) -> Result<(), String> {
    T::deserialize(&Value::Object(body.clone())).map(drop).map_err(|e| e.to_string())
}

/// The body of type `T` (`palaver_api::bodies`).
pub(crate) const fn body<T: JsonSchema + DeserializeOwned>() -> RequestBody {
    RequestBody { schema: schema::<T>, check: check::<T> }
}

/// One endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) method: &'static str,
    /// Path below `/v1/im`, with `{name}` segments for parameters.
    pub(crate) path: &'static str,
    /// The business command a plugin handles (`on-command`).
    pub(crate) command: CommandName,
    /// The OpenAPI tag.
    pub(crate) tag: &'static str,
    pub(crate) summary: &'static str,
    /// The JSON body it takes, if any.
    pub(crate) request: Option<RequestBody>,
    /// What it answers with 200 (`palaver_api::bodies`, which the service serializes).
    pub(crate) response: SchemaFn,
    /// Query parameters it reads.
    pub(crate) query: &'static [&'static str],
}

#[expect(clippy::too_many_arguments, reason = "one positional row per endpoint keeps the table one line per route")]
const fn r(
    method: &'static str,
    path: &'static str,
    command: CommandName,
    tag: &'static str,
    summary: &'static str,
    request: Option<RequestBody>,
    response: SchemaFn,
    query: &'static [&'static str],
) -> Route {
    Route { method, path, command, tag, summary, request, response, query }
}

const PAGE: &[&str] = &["cursor", "limit"];

/// Every endpoint of the API.
pub(crate) const ROUTES: &[Route] = &[
    // Friends and blocks.
    r(
        "POST",
        "/friends/requests",
        C::FriendRequestCreate,
        "friends",
        "Send a friend request (`to`, `message`).",
        Some(body::<b::FriendRequestBody>()),
        schema::<b::FriendRequestCreated>,
        &[],
    ),
    r(
        "GET",
        "/friends/requests",
        C::FriendRequestList,
        "friends",
        "List incoming or outgoing requests (`box`).",
        None,
        schema::<b::FriendRequestPage>,
        &["box", "status", "cursor", "limit"],
    ),
    r(
        "POST",
        "/friends/requests/{id}/accept",
        C::FriendRequestAccept,
        "friends",
        "Accept a request addressed to you.",
        None,
        schema::<b::FriendRequestDecided>,
        &[],
    ),
    r(
        "POST",
        "/friends/requests/{id}/reject",
        C::FriendRequestReject,
        "friends",
        "Reject a request addressed to you.",
        None,
        schema::<b::FriendRequestDecided>,
        &[],
    ),
    r(
        "POST",
        "/friends/requests/{id}/cancel",
        C::FriendRequestCancel,
        "friends",
        "Withdraw a request you sent.",
        None,
        schema::<b::FriendRequestDecided>,
        &[],
    ),
    r("GET", "/friends", C::FriendList, "friends", "List your friends.", None, schema::<b::FriendPage>, PAGE),
    r(
        "DELETE",
        "/friends/{user}",
        C::FriendDelete,
        "friends",
        "End a friendship (both sides).",
        None,
        schema::<b::FriendDeleted>,
        &[],
    ),
    r(
        "PUT",
        "/friends/{user}/remark",
        C::FriendRemark,
        "friends",
        "Set or clear the name you gave a friend (`remark`).",
        Some(body::<b::RemarkBody>()),
        schema::<b::RemarkSet>,
        &[],
    ),
    r(
        "POST",
        "/blocks",
        C::BlockCreate,
        "friends",
        "Block a user (`user`, `reason`).",
        Some(body::<b::BlockBody>()),
        schema::<b::Blocked>,
        &[],
    ),
    r("GET", "/blocks", C::BlockList, "friends", "List the users you blocked.", None, schema::<b::BlockPage>, PAGE),
    r("DELETE", "/blocks/{user}", C::BlockDelete, "friends", "Unblock a user.", None, schema::<b::Unblocked>, &[]),
    // Group governance.
    r(
        "GET",
        "/groups/{topic}/members",
        C::GroupMemberList,
        "groups",
        "Page through a group's members with a stable cursor.",
        None,
        schema::<b::MemberPage>,
        PAGE,
    ),
    r(
        "DELETE",
        "/groups/{topic}/members/{user}",
        C::GroupMemberRemove,
        "groups",
        "Remove (kick) a member.",
        None,
        schema::<b::MemberRemoved>,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/members/{user}/role",
        C::GroupRoleSet,
        "groups",
        "Make a member an admin or a plain member (`role`).",
        Some(body::<b::RoleBody>()),
        schema::<b::RoleSet>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/owner",
        C::GroupOwnerTransfer,
        "groups",
        "Hand the group to another member (`user`).",
        Some(body::<b::OwnerBody>()),
        schema::<b::OwnerTransferred>,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/mutes/{user}",
        C::GroupMuteSet,
        "groups",
        "Mute a member (`duration_ms`, `reason`).",
        Some(body::<b::MuteBody>()),
        schema::<b::MuteSet>,
        &[],
    ),
    r(
        "DELETE",
        "/groups/{topic}/mutes/{user}",
        C::GroupMuteClear,
        "groups",
        "Lift a member's mute.",
        None,
        schema::<b::MuteSet>,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/mute-all",
        C::GroupMuteAll,
        "groups",
        "Mute or unmute everyone but admins (`muted`).",
        Some(body::<b::MuteAllBody>()),
        schema::<b::MuteAllSet>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/invites",
        C::GroupInvite,
        "groups",
        "Invite users (`users`); the group's approval policy applies.",
        Some(body::<b::InviteBody>()),
        schema::<b::Invited>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests",
        C::GroupJoinRequest,
        "groups",
        "Ask to join a group (`message`).",
        Some(body::<b::JoinBody>()),
        schema::<b::Joined>,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/join-requests",
        C::GroupJoinList,
        "groups",
        "List pending join requests (admins).",
        None,
        schema::<b::JoinRequestPage>,
        PAGE,
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/approve",
        C::GroupJoinApprove,
        "groups",
        "Approve a join request.",
        None,
        schema::<b::JoinDecided>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/reject",
        C::GroupJoinReject,
        "groups",
        "Reject a join request.",
        None,
        schema::<b::JoinDecided>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/cancel",
        C::GroupJoinCancel,
        "groups",
        "Withdraw your own join request.",
        None,
        schema::<b::JoinDecided>,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/settings",
        C::GroupSettingsGet,
        "groups",
        "The group's join policy and invite rule.",
        None,
        schema::<b::GroupSettings>,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/settings",
        C::GroupSettingsSet,
        "groups",
        "Change the join policy (`join_policy`: open, approval, closed) or whether members invite (`members_invite`).",
        Some(body::<b::SettingsBody>()),
        schema::<b::GroupSettings>,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/announcements",
        C::GroupAnnouncementList,
        "groups",
        "List announcements, with your read state.",
        None,
        schema::<b::AnnouncementList>,
        PAGE,
    ),
    r(
        "POST",
        "/groups/{topic}/announcements",
        C::GroupAnnouncementCreate,
        "groups",
        "Publish an announcement (`title`, `content`, `pinned`).",
        Some(body::<b::AnnouncementBody>()),
        schema::<b::Announcement>,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/announcements/{id}",
        C::GroupAnnouncementUpdate,
        "groups",
        "Edit an announcement.",
        Some(body::<b::AnnouncementBody>()),
        schema::<b::Announcement>,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/announcements/{id}/read",
        C::GroupAnnouncementRead,
        "groups",
        "Mark an announcement read.",
        None,
        schema::<b::AnnouncementRead>,
        &[],
    ),
    r(
        "DELETE",
        "/groups/{topic}/announcements/{id}",
        C::GroupAnnouncementDelete,
        "groups",
        "Remove an announcement.",
        None,
        schema::<b::AnnouncementDeleted>,
        &[],
    ),
    r(
        "PATCH",
        "/groups/{topic}/profile",
        C::GroupProfileUpdate,
        "groups",
        "Change the group's name, avatar or intro.",
        Some(body::<b::ProfileBody>()),
        schema::<b::ProfileUpdated>,
        &[],
    ),
    // Abuse reports.
    r(
        "POST",
        "/reports",
        C::ReportCreate,
        "reports",
        "Report a user, a message or a group (`target_type`: user, message, group; `target`: usr…, {topic}:{seq} \
         or grp…; `reason`, `note`).",
        Some(body::<b::ReportBody>()),
        schema::<b::ReportCreated>,
        &[],
    ),
    // System notifications.
    r(
        "GET",
        "/notifications",
        C::NotificationList,
        "notifications",
        "List your system notifications, newest first.",
        None,
        schema::<b::NotificationPage>,
        &["unread", "cursor", "limit"],
    ),
    r(
        "POST",
        "/notifications/{id}/read",
        C::NotificationRead,
        "notifications",
        "Mark one notification read.",
        None,
        schema::<b::NotificationMarked>,
        &[],
    ),
    r(
        "POST",
        "/notifications/read-all",
        C::NotificationReadAll,
        "notifications",
        "Mark every notification read.",
        None,
        schema::<b::AllMarked>,
        &[],
    ),
    r(
        "GET",
        "/notifications/unread-count",
        C::NotificationUnread,
        "notifications",
        "How many notifications are unread.",
        None,
        schema::<b::UnreadCount>,
        &[],
    ),
];

/// Path parameters by name, in path order.
pub(crate) type Params = Vec<(&'static str, String)>;

/// One entry of a route table, as the matcher and the OpenAPI document read it.
pub(crate) trait Endpoint: 'static {
    fn method(&self) -> &'static str;
    /// The full path, with `{name}` segments for parameters.
    fn path(&self) -> String;
    /// The path below the API's prefix, as the table writes it.
    fn local_path(&self) -> &'static str;
    fn operation_id(&self) -> &'static str;
    fn tag(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    fn request(&self) -> Option<RequestBody>;
    fn response(&self) -> SchemaFn;
    fn query(&self) -> &'static [&'static str];
    /// The security scheme of the OpenAPI document that the endpoint requires.
    fn security(&self) -> serde_json::Value;
}

impl Endpoint for Route {
    fn method(&self) -> &'static str {
        self.method
    }
    fn path(&self) -> String {
        format!("/v1/im{}", self.path)
    }
    fn local_path(&self) -> &'static str {
        self.path
    }
    fn operation_id(&self) -> &'static str {
        self.command.name()
    }
    fn tag(&self) -> &'static str {
        self.tag
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn request(&self) -> Option<RequestBody> {
        self.request
    }
    fn response(&self) -> SchemaFn {
        self.response
    }
    fn query(&self) -> &'static [&'static str] {
        self.query
    }
    fn security(&self) -> serde_json::Value {
        serde_json::json!([{ "apiKey": [], "token": [] }])
    }
}

/// The entry of `table` matching `method` and `path` (below the table's prefix), with its path parameters.
/// A literal segment beats a parameter, so `/notifications/read-all` is not read as `/notifications/{id}`.
pub(crate) fn find_in<E: Endpoint>(table: &'static [E], method: &str, path: &str) -> Option<(&'static E, Params)> {
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut best: Option<(&'static E, Params, usize)> = None;
    for route in table.iter().filter(|r| r.method() == method) {
        let want: Vec<&str> = route.local_path().trim_matches('/').split('/').collect();
        if want.len() != got.len() {
            continue;
        }
        let mut params = Vec::new();
        let mut literals = 0;
        let fits = want.iter().zip(&got).all(|(w, g)| match w.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
            Some(name) if !g.is_empty() => {
                params.push((name, (*g).to_owned()));
                true
            }
            Some(_) => false,
            None => {
                literals += 1;
                w == g
            }
        });
        if fits && best.as_ref().is_none_or(|(_, _, l)| literals > *l) {
            best = Some((route, params, literals));
        }
    }
    best.map(|(r, p, _)| (r, p))
}

/// True if some entry of `table` has this path under another method (405 rather than 404).
pub(crate) fn path_exists_in<E: Endpoint>(table: &'static [E], path: &str) -> bool {
    ["GET", "POST", "PUT", "PATCH", "DELETE"].iter().any(|m| find_in(table, m, path).is_some())
}

/// The `/v1/im` route matching `method` and `path` (below `/v1/im`), with its path parameters, or `None`.
pub(crate) fn find(method: &str, path: &str) -> Option<(&'static Route, Params)> {
    find_in(ROUTES, method, path)
}

/// True if some `/v1/im` route has this path under another method.
pub(crate) fn path_exists(path: &str) -> bool {
    path_exists_in(ROUTES, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_beat_parameters_and_parameters_are_captured() {
        let (r, p) = find("POST", "/notifications/read-all").unwrap();
        assert_eq!(r.command, C::NotificationReadAll);
        assert!(p.is_empty());
        let (r, p) = find("POST", "/notifications/42/read").unwrap();
        assert_eq!(r.command, C::NotificationRead);
        assert_eq!(p, [("id", "42".to_owned())]);
        let (r, p) = find("PUT", "/groups/grpX/members/usrY/role").unwrap();
        assert_eq!(r.command, C::GroupRoleSet);
        assert_eq!(p, [("topic", "grpX".to_owned()), ("user", "usrY".to_owned())]);
        assert!(find("GET", "/nothing").is_none());
        assert!(find("PATCH", "/friends").is_none());
        assert!(path_exists("/friends"));
    }

    #[test]
    fn every_route_is_unique_and_named_once() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {} twice", a.method, a.path);
                assert_ne!(a.command, b.command, "command {} twice", a.command);
            }
        }
    }
}
