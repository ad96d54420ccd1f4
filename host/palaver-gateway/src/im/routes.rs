//! The route table of the `/v1/im/` API: one entry per endpoint, naming the business command it runs. The
//! router and the OpenAPI document are both read from this table, and a test drives every entry through the
//! router, so the two cannot drift apart.

use crate::route::{Operation, Params, body, find_in, path_exists_in, r, schema};
use palaver_api::CommandName;
use palaver_api::CommandName as C;
use palaver_api::bodies as b;

/// A `/v1/im` endpoint runs the business command a plugin handles (`on-command`); the command's name is the
/// operation id.
pub(crate) type Route = crate::route::Route<CommandName>;

impl Operation for CommandName {
    const PREFIX: &'static str = "/v1/im";

    fn operation_id(self) -> &'static str {
        self.name()
    }

    fn security() -> serde_json::Value {
        serde_json::json!([{ "apiKey": [], "token": [] }])
    }
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
        assert_eq!(r.op, C::NotificationReadAll);
        assert!(p.is_empty());
        let (r, p) = find("POST", "/notifications/42/read").unwrap();
        assert_eq!(r.op, C::NotificationRead);
        assert_eq!(p, [("id", "42".to_owned())]);
        let (r, p) = find("PUT", "/groups/grpX/members/usrY/role").unwrap();
        assert_eq!(r.op, C::GroupRoleSet);
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
                assert_ne!(a.op, b.op, "command {} twice", a.op);
            }
        }
    }
}
