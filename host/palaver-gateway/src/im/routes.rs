//! The route table of the `/v1/im/` API: one entry per endpoint, naming the business command it runs. The
//! router and the OpenAPI document are both read from this table, and a test drives every entry through the
//! router, so the two cannot drift apart.

/// One endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) method: &'static str,
    /// Path below `/v1/im`, with `{name}` segments for parameters.
    pub(crate) path: &'static str,
    /// The business command a plugin handles (`on-command`).
    pub(crate) command: &'static str,
    /// The OpenAPI tag.
    pub(crate) tag: &'static str,
    pub(crate) summary: &'static str,
    /// Whether the endpoint takes a JSON body.
    pub(crate) body: bool,
    /// Query parameters it reads.
    pub(crate) query: &'static [&'static str],
}

const fn r(
    method: &'static str,
    path: &'static str,
    command: &'static str,
    tag: &'static str,
    summary: &'static str,
    body: bool,
    query: &'static [&'static str],
) -> Route {
    Route { method, path, command, tag, summary, body, query }
}

const PAGE: &[&str] = &["cursor", "limit"];

/// Every endpoint of the API.
pub(crate) const ROUTES: &[Route] = &[
    // Friends and blocks.
    r(
        "POST",
        "/friends/requests",
        "friend.request.create",
        "friends",
        "Send a friend request (`to`, `message`).",
        true,
        &[],
    ),
    r(
        "GET",
        "/friends/requests",
        "friend.request.list",
        "friends",
        "List incoming or outgoing requests (`box`).",
        false,
        &["box", "status", "cursor", "limit"],
    ),
    r(
        "POST",
        "/friends/requests/{id}/accept",
        "friend.request.accept",
        "friends",
        "Accept a request addressed to you.",
        false,
        &[],
    ),
    r(
        "POST",
        "/friends/requests/{id}/reject",
        "friend.request.reject",
        "friends",
        "Reject a request addressed to you.",
        false,
        &[],
    ),
    r(
        "POST",
        "/friends/requests/{id}/cancel",
        "friend.request.cancel",
        "friends",
        "Withdraw a request you sent.",
        false,
        &[],
    ),
    r("GET", "/friends", "friend.list", "friends", "List your friends.", false, PAGE),
    r("DELETE", "/friends/{user}", "friend.delete", "friends", "End a friendship (both sides).", false, &[]),
    r(
        "PUT",
        "/friends/{user}/remark",
        "friend.remark",
        "friends",
        "Set or clear the name you gave a friend (`remark`).",
        true,
        &[],
    ),
    r("POST", "/blocks", "block.create", "friends", "Block a user (`user`, `reason`).", true, &[]),
    r("GET", "/blocks", "block.list", "friends", "List the users you blocked.", false, PAGE),
    r("DELETE", "/blocks/{user}", "block.delete", "friends", "Unblock a user.", false, &[]),
    // Group governance.
    r(
        "GET",
        "/groups/{topic}/members",
        "group.member.list",
        "groups",
        "Page through a group's members with a stable cursor.",
        false,
        PAGE,
    ),
    r(
        "DELETE",
        "/groups/{topic}/members/{user}",
        "group.member.remove",
        "groups",
        "Remove (kick) a member.",
        false,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/members/{user}/role",
        "group.role.set",
        "groups",
        "Make a member an admin or a plain member (`role`).",
        true,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/owner",
        "group.owner.transfer",
        "groups",
        "Hand the group to another member (`user`).",
        true,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/mutes/{user}",
        "group.mute.set",
        "groups",
        "Mute a member (`duration_ms`, `reason`).",
        true,
        &[],
    ),
    r("DELETE", "/groups/{topic}/mutes/{user}", "group.mute.clear", "groups", "Lift a member's mute.", false, &[]),
    r(
        "PUT",
        "/groups/{topic}/mute-all",
        "group.mute.all",
        "groups",
        "Mute or unmute everyone but admins (`muted`).",
        true,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/invites",
        "group.invite",
        "groups",
        "Invite users (`users`); the group's approval policy applies.",
        true,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests",
        "group.join.request",
        "groups",
        "Ask to join a group (`message`).",
        true,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/join-requests",
        "group.join.list",
        "groups",
        "List pending join requests (admins).",
        false,
        PAGE,
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/approve",
        "group.join.approve",
        "groups",
        "Approve a join request.",
        false,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/reject",
        "group.join.reject",
        "groups",
        "Reject a join request.",
        false,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/join-requests/{id}/cancel",
        "group.join.cancel",
        "groups",
        "Withdraw your own join request.",
        false,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/settings",
        "group.settings.get",
        "groups",
        "The group's join policy and invite rule.",
        false,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/settings",
        "group.settings.set",
        "groups",
        "Change the join policy (`join_policy`: open, approval, closed) or whether members invite (`members_invite`).",
        true,
        &[],
    ),
    r(
        "GET",
        "/groups/{topic}/announcements",
        "group.announcement.list",
        "groups",
        "List announcements, with your read state.",
        false,
        PAGE,
    ),
    r(
        "POST",
        "/groups/{topic}/announcements",
        "group.announcement.create",
        "groups",
        "Publish an announcement (`title`, `content`, `pinned`).",
        true,
        &[],
    ),
    r(
        "PUT",
        "/groups/{topic}/announcements/{id}",
        "group.announcement.update",
        "groups",
        "Edit an announcement.",
        true,
        &[],
    ),
    r(
        "POST",
        "/groups/{topic}/announcements/{id}/read",
        "group.announcement.read",
        "groups",
        "Mark an announcement read.",
        false,
        &[],
    ),
    r(
        "DELETE",
        "/groups/{topic}/announcements/{id}",
        "group.announcement.delete",
        "groups",
        "Remove an announcement.",
        false,
        &[],
    ),
    r(
        "PATCH",
        "/groups/{topic}/profile",
        "group.profile.update",
        "groups",
        "Change the group's name, avatar or intro.",
        true,
        &[],
    ),
    // System notifications.
    r(
        "GET",
        "/notifications",
        "notification.list",
        "notifications",
        "List your system notifications, newest first.",
        false,
        &["unread", "cursor", "limit"],
    ),
    r(
        "POST",
        "/notifications/{id}/read",
        "notification.read",
        "notifications",
        "Mark one notification read.",
        false,
        &[],
    ),
    r(
        "POST",
        "/notifications/read-all",
        "notification.read_all",
        "notifications",
        "Mark every notification read.",
        false,
        &[],
    ),
    r(
        "GET",
        "/notifications/unread-count",
        "notification.unread",
        "notifications",
        "How many notifications are unread.",
        false,
        &[],
    ),
];

/// Path parameters by name, in path order.
pub(crate) type Params = Vec<(&'static str, String)>;

/// The route matching `method` and `path` (below `/v1/im`), with its path parameters, or `None`.
/// A literal segment beats a parameter, so `/notifications/read-all` is not read as `/notifications/{id}`.
pub(crate) fn find(method: &str, path: &str) -> Option<(&'static Route, Params)> {
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut best: Option<(&'static Route, Params, usize)> = None;
    for route in ROUTES.iter().filter(|r| r.method == method) {
        let want: Vec<&str> = route.path.trim_matches('/').split('/').collect();
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

/// True if some route has this path under another method (405 rather than 404).
pub(crate) fn path_exists(path: &str) -> bool {
    ["GET", "POST", "PUT", "PATCH", "DELETE"].iter().any(|m| find(m, path).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_beat_parameters_and_parameters_are_captured() {
        let (r, p) = find("POST", "/notifications/read-all").unwrap();
        assert_eq!(r.command, "notification.read_all");
        assert!(p.is_empty());
        let (r, p) = find("POST", "/notifications/42/read").unwrap();
        assert_eq!(r.command, "notification.read");
        assert_eq!(p, [("id", "42".to_owned())]);
        let (r, p) = find("PUT", "/groups/grpX/members/usrY/role").unwrap();
        assert_eq!(r.command, "group.role.set");
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
