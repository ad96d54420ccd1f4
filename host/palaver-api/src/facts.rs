//! The facts the host gathers before asking the rules about a command, one type per kind of command (the
//! table in `commands.rs` says which command gets which). The host builds these values and the plugins read
//! the same types, so both sides agree by construction. Every field is required and no other field is
//! accepted: facts that do not fit are an error (the plugin answers `FACTS_INVALID`, which fails the command
//! closed), never a silent default. The only optional facts are those whose absence is the restrictive or an
//! uninformative reading (each says so); a nullable fact a rule allows by (a mute's duration) must be present.

use serde::{Deserialize, Deserializer, Serialize};

/// A nullable fact that must still be present.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// No facts (`{}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoFacts {}

/// `friend.request.create`: the two users' relation and the sender's recent requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FriendRequestFacts {
    /// The addressee, `usr…`.
    pub to: String,
    pub friends: bool,
    pub i_blocked: bool,
    pub blocked_me: bool,
    /// The sender's pending request to the addressee, if any. Absent reads as none, the restrictive reading
    /// (the request then counts against the limit), so that fixtures in TOML, which has no null, can omit it.
    #[serde(default)]
    pub pending_out: Option<i64>,
    /// The addressee's pending request to the sender, if any (absent reads as none).
    #[serde(default)]
    pub pending_in: Option<i64>,
    /// Requests the sender made in the last 24 hours.
    pub sent_today: u64,
    pub message_chars: u64,
}

/// `friend.request.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestListFacts {
    /// `incoming` or `outgoing`.
    #[serde(rename = "box")]
    pub mailbox: String,
}

/// A decision on a friend request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFacts {
    pub request_id: i64,
}

/// A command about one other user (`friend.delete`, `block.*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserFacts {
    pub user: String,
}

/// `friend.remark`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemarkFacts {
    pub user: String,
    pub remark_chars: u64,
}

/// `friend.p2p.send`, asked before P2P messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pSendFacts {
    pub friends: bool,
}

/// A member's role in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Member,
    Admin,
    Owner,
}

/// How a group takes new members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JoinPolicy {
    Open,
    Approval,
    Closed,
}

/// A group's settings, as the rules see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub join_policy: JoinPolicy,
    pub members_invite: bool,
}

/// What every governance rule gets: the group and the actor's place in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub topic: String,
    pub actor_role: Role,
    /// The owner, if the group has one; informational (no rule allows by it), so absent reads as none.
    #[serde(default)]
    pub owner: Option<String>,
    pub admins: u64,
    pub settings: Settings,
}

/// A group command with no facts of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFacts {
    pub group: Group,
}

/// A group command about one member (`group.owner.transfer`, `group.mute.clear`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberFacts {
    pub group: Group,
    pub user: String,
    pub user_role: Role,
}

/// `group.member.remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberRemoveFacts {
    pub group: Group,
    pub user: String,
    pub user_role: Role,
    /// The member leaves on their own.
    #[serde(rename = "self")]
    pub leaving: bool,
}

/// `group.role.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSetFacts {
    pub group: Group,
    pub user: String,
    pub user_role: Role,
    /// The role asked for (`admin` or `member`).
    pub role: Role,
}

/// `group.mute.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuteSetFacts {
    pub group: Group,
    pub user: String,
    pub user_role: Role,
    /// `null` for a mute without end.
    #[serde(deserialize_with = "present")]
    pub duration_ms: Option<i64>,
}

/// `group.mute.all`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuteAllFacts {
    pub group: Group,
    pub muted: bool,
}

/// `group.invite`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InviteFacts {
    pub group: Group,
    pub users: Vec<String>,
}

/// A decision on a join request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRequestFacts {
    pub group: Group,
    pub request_id: i64,
}

/// `group.settings.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsSetFacts {
    pub group: Group,
    /// The settings after the change.
    pub new: Settings,
}

/// `group.announcement.create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftFacts {
    pub group: Group,
    pub content_chars: u64,
    pub content_bytes: u64,
    pub pinned: bool,
}

/// `group.announcement.update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftEditFacts {
    pub group: Group,
    pub announcement_id: i64,
    pub content_chars: u64,
    pub content_bytes: u64,
    pub pinned: bool,
}

/// `group.announcement.read` and `group.announcement.delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnouncementFacts {
    pub group: Group,
    pub announcement_id: i64,
}

/// `group.profile.update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFacts {
    pub group: Group,
    pub name_chars: u64,
    pub intro_chars: u64,
}
