//! The group governance aggregate: business roles, mutes, join requests, per-group settings and announcements,
//! on top of a group topic's subscriptions.
//!
//! The governance plugin owns the rules (who may mute whom, how many admins a group may have, whether an invite
//! needs approval); this port owns the primitives that keep them race-free: at most one owner, an admin limit
//! checked in the same transaction as the grant, at most one pending join request per user and group, a request
//! decided at most once, and an announcement read mark whose first time is kept.

use crate::ports::{REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, RequestStatus};
use crate::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use serde_json::Value;

/// The `Conflict` reason when granting admin would exceed the limit the caller passed.
pub const ADMIN_LIMIT: &str = "admin limit";

/// The `Conflict` reason when the user named as the current owner does not own the group.
pub const NOT_OWNER: &str = "not owner";

/// The `Conflict` reason when [`GroupStore::set_role`] would make someone the owner or change the owner's role:
/// only [`GroupStore::transfer_owner`] moves ownership.
pub const OWNER_ROLE: &str = "owner role";

/// A member's business role. A member without a stored role is a plain `Member`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupRole {
    Member,
    Admin,
    Owner,
}

impl GroupRole {
    /// The word stored for the role.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupRole::Owner => "owner",
            GroupRole::Admin => "admin",
            GroupRole::Member => "member",
        }
    }

    /// The role a stored word names, or `None` for an unknown word.
    pub fn parse(s: &str) -> Option<GroupRole> {
        match s {
            "owner" => Some(GroupRole::Owner),
            "admin" => Some(GroupRole::Admin),
            "member" => Some(GroupRole::Member),
            _ => None,
        }
    }
}

/// What [`GroupStore::set_role`] does to a member, as [`GroupRole::change_to`] decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleChange {
    /// The member has the role already; nothing is written.
    Keep,
    /// An admin becomes a plain member: the stored role is removed.
    Revoke,
    /// A plain member becomes an admin, once [`check_admin_limit`] allows it.
    GrantAdmin,
}

impl GroupRole {
    /// What making a member whose stored role is `self` into `role` takes, or `Conflict(OWNER_ROLE)` when either
    /// is `Owner` (only [`GroupStore::transfer_owner`] moves ownership). Adapters call this on the role they read
    /// in the transaction that writes, so every backend applies the same rules.
    pub fn change_to(self, role: GroupRole) -> StoreResult<RoleChange> {
        if role == GroupRole::Owner || self == GroupRole::Owner {
            return Err(StoreError::Conflict(OWNER_ROLE.to_owned()));
        }
        Ok(if role == self {
            RoleChange::Keep
        } else if role == GroupRole::Member {
            RoleChange::Revoke
        } else {
            RoleChange::GrantAdmin
        })
    }
}

/// `Conflict(ADMIN_LIMIT)` when a group that has `admins` admins may not gain another under `max_admins`.
pub fn check_admin_limit(admins: u64, max_admins: Option<u32>) -> StoreResult<()> {
    if max_admins.is_some_and(|max| admins >= u64::from(max)) {
        return Err(StoreError::Conflict(ADMIN_LIMIT.to_owned()));
    }
    Ok(())
}

/// A stored role above `Member`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleGrant {
    pub user: UserId,
    pub role: GroupRole,
    pub granted_by: Option<UserId>,
    pub updated: UnixMillis,
}

/// A mute of one member, or of every member when `user` is `None` ("mute all").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mute {
    pub user: Option<UserId>,
    pub muted_by: Option<UserId>,
    pub reason: Option<String>,
    /// The mute ends at this time; `None` means until lifted.
    pub until: Option<UnixMillis>,
    pub created: UnixMillis,
    pub updated: UnixMillis,
}

impl Mute {
    /// True while the mute holds at `now`; an end equal to `now` has passed.
    pub fn active(&self, now: UnixMillis) -> bool {
        self.until.is_none_or(|u| u > now)
    }
}

/// Who may join a group and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JoinPolicy {
    /// Anyone may join; invites take effect at once.
    Open,
    /// Joining, and invites by plain members, wait for an admin's approval.
    #[default]
    Approval,
    /// Only admins can add members; join requests are refused.
    Closed,
}

impl JoinPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            JoinPolicy::Open => "open",
            JoinPolicy::Approval => "approval",
            JoinPolicy::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<JoinPolicy> {
        match s {
            "open" => Some(JoinPolicy::Open),
            "approval" => Some(JoinPolicy::Approval),
            "closed" => Some(JoinPolicy::Closed),
            _ => None,
        }
    }
}

/// A group's governance settings; a group without stored settings has the defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupSettings {
    pub join_policy: JoinPolicy,
    /// Whether plain members may invite (their invites then follow `join_policy`).
    pub members_invite: bool,
    /// When the settings were last stored; 0 for the defaults.
    pub updated: UnixMillis,
}

/// A request to join a group: by the user themselves (`inviter` is `None`) or an invite by a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    /// Unique within the tenant and increasing with creation, so it doubles as the paging cursor.
    pub id: i64,
    pub topic: String,
    pub user: UserId,
    pub inviter: Option<UserId>,
    pub message: Option<String>,
    /// `Pending`, then `Accepted` (approved), `Rejected` or `Cancelled`.
    pub status: RequestStatus,
    pub handled_by: Option<UserId>,
    pub created: UnixMillis,
    pub handled: Option<UnixMillis>,
}

impl JoinRequest {
    /// A request just stored under `id`: pending, created at `now`, not handled yet.
    pub fn pending(
        id: i64,
        topic: &str,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> JoinRequest {
        JoinRequest {
            id,
            topic: topic.to_owned(),
            user,
            inviter,
            message: message.map(str::to_owned),
            status: RequestStatus::Pending,
            handled_by: None,
            created: now,
            handled: None,
        }
    }

    /// The request as `decision` by `by` at `now` leaves it, or the `Conflict` that refuses the decision:
    /// [`REQUEST_NOT_YOURS`] when `by` cancels another user's request (refused before a request that is no
    /// longer pending, as with friend requests), [`REQUEST_NOT_PENDING`] when it was decided already. Whether
    /// `by` may approve or reject is the caller's check. Adapters call this on the row they locked, so every
    /// backend applies the same rules.
    pub fn decide(&self, by: UserId, decision: JoinDecision, now: UnixMillis) -> StoreResult<JoinRequest> {
        let status = match decision {
            JoinDecision::Approve => RequestStatus::Accepted,
            JoinDecision::Reject => RequestStatus::Rejected,
            JoinDecision::Cancel if by != self.user => {
                return Err(StoreError::Conflict(REQUEST_NOT_YOURS.to_owned()));
            }
            JoinDecision::Cancel => RequestStatus::Cancelled,
        };
        if self.status != RequestStatus::Pending {
            return Err(StoreError::Conflict(REQUEST_NOT_PENDING.to_owned()));
        }
        Ok(JoinRequest { status, handled_by: Some(by), handled: Some(now), ..self.clone() })
    }
}

/// What [`GroupStore::create_join_request`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinOutcome {
    Created(JoinRequest),
    /// A request for the same user and group was already pending; returned unchanged, nothing written.
    AlreadyPending(JoinRequest),
}

/// How a join request is decided: approved or rejected by an admin (the caller checks the role), cancelled by
/// the user it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinDecision {
    Approve,
    Reject,
    Cancel,
}

/// An announcement in a group. Edits bump `version`; a removed one is never listed again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// Unique within the tenant and increasing with creation.
    pub id: i64,
    pub topic: String,
    pub author: UserId,
    pub title: Option<String>,
    pub content: Value,
    pub pinned: bool,
    pub version: i32,
    pub created: UnixMillis,
    pub updated: UnixMillis,
}

impl Announcement {
    /// An announcement just stored under `id`: the draft by `author` at `now`, version 1.
    pub fn first(id: i64, topic: &str, author: UserId, draft: &AnnouncementDraft, now: UnixMillis) -> Announcement {
        Announcement {
            id,
            topic: topic.to_owned(),
            author,
            title: draft.title.clone(),
            content: draft.content.clone(),
            pinned: draft.pinned,
            version: 1,
            created: now,
            updated: now,
        }
    }
}

/// An announcement as one member sees it: with their read mark and how many members read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnouncementView {
    pub announcement: Announcement,
    /// When the viewer first read it; `None` while unread.
    pub read: Option<UnixMillis>,
    pub reads: u64,
}

/// The text and flags of a new or edited announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnouncementDraft {
    pub title: Option<String>,
    pub content: Value,
    pub pinned: bool,
}

/// Roles, mutes, settings, join requests and announcements of group topics.
#[async_trait::async_trait]
pub trait GroupStore: Send + Sync {
    /// The group's stored roles above `Member`, owner first, then admins by user id.
    async fn roles(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<RoleGrant>>;

    /// Makes `owner` the group's owner if it has none yet (a group created before governance state existed);
    /// does nothing if any owner is stored. True if it wrote.
    async fn ensure_owner(&self, tenant: TenantId, topic: &str, owner: UserId, now: UnixMillis) -> StoreResult<bool>;

    /// Sets `user`'s role to `Admin` or `Member` (which removes the stored role). Granting `Admin` with
    /// `max_admins` counts the admins in the same transaction and refuses with `Conflict(ADMIN_LIMIT)` when
    /// the group has that many already (a user who is an admin already changes nothing and is not refused).
    /// `Conflict(OWNER_ROLE)` for `Owner` (use [`GroupStore::transfer_owner`]) and for a user who is the owner.
    /// True if the role changed.
    #[allow(clippy::too_many_arguments)]
    async fn set_role(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        role: GroupRole,
        by: UserId,
        max_admins: Option<u32>,
        now: UnixMillis,
    ) -> StoreResult<bool>;

    /// Makes `to` the owner and `from` an admin, in one transaction. `Conflict(NOT_OWNER)` if `from` is not
    /// the stored owner, also when a concurrent transfer moved it first. A transfer to `from` itself changes
    /// nothing.
    async fn transfer_owner(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        to: UserId,
        now: UnixMillis,
    ) -> StoreResult<()>;

    /// Mutes one member (`user`) or everyone (`None`) until `until` (or until lifted), replacing any mute of
    /// the same target.
    #[allow(clippy::too_many_arguments)]
    async fn mute(
        &self,
        tenant: TenantId,
        topic: &str,
        user: Option<UserId>,
        by: UserId,
        reason: Option<&str>,
        until: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<()>;

    /// Lifts the mute of `user` (or the mute of everyone). False if there was none.
    async fn unmute(&self, tenant: TenantId, topic: &str, user: Option<UserId>) -> StoreResult<bool>;

    /// The mutes that hold at `now`, the mute of everyone first, then members' mutes by user id.
    async fn mutes(&self, tenant: TenantId, topic: &str, now: UnixMillis) -> StoreResult<Vec<Mute>>;

    /// Drops the member's role (unless owner) and mute: they left or were removed. The owner's role stays,
    /// because a group always has one.
    async fn forget_member(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()>;

    /// The group's settings, the defaults if none are stored.
    async fn settings(&self, tenant: TenantId, topic: &str) -> StoreResult<GroupSettings>;

    /// Stores the group's settings (`updated` is set to `now`).
    async fn set_settings(
        &self,
        tenant: TenantId,
        topic: &str,
        settings: &GroupSettings,
        now: UnixMillis,
    ) -> StoreResult<()>;

    /// Stores a pending request for `user` to join `topic`. A request already pending for the same user and
    /// group is returned as `AlreadyPending`, never duplicated, even when two calls race.
    async fn create_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<JoinOutcome>;

    /// The pending request of `user` for `topic`, if any.
    async fn pending_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
    ) -> StoreResult<Option<JoinRequest>>;

    /// Decides a pending request of `topic` and returns it as it now is. `NotFound` if the group has no such
    /// request; `Conflict(REQUEST_NOT_YOURS)` if `by` cancels someone else's request;
    /// `Conflict(REQUEST_NOT_PENDING)` if it was decided already, also when a concurrent call decided it first.
    async fn decide_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        by: UserId,
        decision: JoinDecision,
        now: UnixMillis,
    ) -> StoreResult<JoinRequest>;

    /// The group's requests, optionally in one status, newest first, at most `limit`, strictly below `cursor`.
    async fn list_join_requests(
        &self,
        tenant: TenantId,
        topic: &str,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<JoinRequest>>;

    /// Stores a new announcement by `author`, version 1.
    async fn add_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        author: UserId,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement>;

    /// Replaces an announcement's text and flags and bumps its version. `NotFound` if the group has no such
    /// live announcement.
    async fn update_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement>;

    /// Removes an announcement. False if the group had no such live announcement.
    async fn delete_announcement(&self, tenant: TenantId, topic: &str, id: i64, now: UnixMillis) -> StoreResult<bool>;

    /// The group's live announcements as `viewer` sees them, pinned first, then newest first, at most `limit`.
    async fn list_announcements(
        &self,
        tenant: TenantId,
        topic: &str,
        viewer: UserId,
        limit: usize,
    ) -> StoreResult<Vec<AnnouncementView>>;

    /// Marks a live announcement of the group read by `user` at `now`. True on the first read; false if read
    /// already, which keeps the first time. `NotFound` if the group has no such live announcement.
    async fn mark_announcement_read(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        user: UserId,
        now: UnixMillis,
    ) -> StoreResult<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_decisions_follow_the_rules() {
        let (user, admin) = (UserId(7), UserId(9));
        let request = JoinRequest::pending(1, "grpA", user, None, Some("hi"), 10);
        let approved = request.decide(admin, JoinDecision::Approve, 20).unwrap();
        assert_eq!(
            (approved.status, approved.handled_by, approved.handled),
            (RequestStatus::Accepted, Some(admin), Some(20))
        );
        assert_eq!(approved.message.as_deref(), Some("hi"));
        assert_eq!(request.decide(admin, JoinDecision::Reject, 20).unwrap().status, RequestStatus::Rejected);
        assert_eq!(request.decide(user, JoinDecision::Cancel, 20).unwrap().status, RequestStatus::Cancelled);
        let not_yours = StoreError::Conflict(REQUEST_NOT_YOURS.to_owned());
        assert_eq!(request.decide(admin, JoinDecision::Cancel, 20).unwrap_err(), not_yours);
        // Someone else's cancel is refused as not theirs even once the request is decided.
        assert_eq!(approved.decide(admin, JoinDecision::Cancel, 30).unwrap_err(), not_yours);
        let not_pending = StoreError::Conflict(REQUEST_NOT_PENDING.to_owned());
        assert_eq!(approved.decide(admin, JoinDecision::Reject, 30).unwrap_err(), not_pending);
        assert_eq!(approved.decide(user, JoinDecision::Cancel, 30).unwrap_err(), not_pending);
    }

    #[test]
    fn role_changes_follow_the_rules() {
        use GroupRole::{Admin, Member, Owner};
        assert_eq!(Member.change_to(Admin).unwrap(), RoleChange::GrantAdmin);
        assert_eq!(Admin.change_to(Member).unwrap(), RoleChange::Revoke);
        assert_eq!(Admin.change_to(Admin).unwrap(), RoleChange::Keep);
        assert_eq!(Member.change_to(Member).unwrap(), RoleChange::Keep);
        let owner_role = StoreError::Conflict(OWNER_ROLE.to_owned());
        assert_eq!(Member.change_to(Owner).unwrap_err(), owner_role);
        assert_eq!(Owner.change_to(Admin).unwrap_err(), owner_role);
        assert_eq!(Owner.change_to(Owner).unwrap_err(), owner_role);
        assert!(check_admin_limit(1, Some(2)).is_ok());
        assert!(check_admin_limit(5, None).is_ok());
        assert_eq!(check_admin_limit(2, Some(2)).unwrap_err(), StoreError::Conflict(ADMIN_LIMIT.to_owned()));
    }
}
