//! A group's governance state and its changes: roles (with the owner a group created over Tinode's protocol
//! already has), settings, mutes, join requests, announcements, and the membership changes the `group.*`
//! commands make (adding a member, removal, handing Tinode's ownership over with the business one). The
//! commands check what the rules decide and map each outcome to its reason; these methods are the only code
//! that reaches the group, subscription and topic stores for them.

use crate::Inner;
use crate::delivery::fanout::SHARED_MEMBERS_MAX_AGE_MS;
use palaver_core::ports::{
    Announcement, AnnouncementDraft, AnnouncementView, GroupRole, GroupSettings, JoinDecision, JoinOutcome,
    JoinRequest, RequestStatus, RoleGrant,
};
use palaver_core::{
    AccessMode, RecordState, StoreError, StoreResult, Subscription, TenantId, Topic, TopicUpdate, UnixMillis, UserId,
};

/// The governance use cases of one group of one tenant.
pub(crate) struct Governance<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
    pub(super) topic: &'a str,
}

impl Governance<'_> {
    /// The group's topic, if it is stored and active.
    pub(crate) async fn active_topic(&self) -> StoreResult<Option<Topic>> {
        let topic = self.svc.ports.topics.get_topic(self.tenant, self.topic).await?;
        Ok(topic.filter(|t| t.state == RecordState::Active))
    }

    /// The group's roles above member. A group created over Tinode's protocol has an owner there (the creator)
    /// and no governance rows yet: its owner is recorded first, so every group has exactly one.
    pub(crate) async fn roles(&self, tinode_owner: Option<UserId>, now: UnixMillis) -> StoreResult<Vec<RoleGrant>> {
        let groups = &self.svc.ports.business.groups;
        let roles = groups.roles(self.tenant, self.topic).await?;
        match tinode_owner {
            Some(owner) if !roles.iter().any(|g| g.role == GroupRole::Owner) => {
                groups.ensure_owner(self.tenant, self.topic, owner, now).await?;
                groups.roles(self.tenant, self.topic).await
            }
            _ => Ok(roles),
        }
    }

    /// The group's settings (defaults when none were set).
    pub(crate) async fn settings(&self) -> StoreResult<GroupSettings> {
        self.svc.ports.business.groups.settings(self.tenant, self.topic).await
    }

    /// Replaces the group's settings.
    pub(crate) async fn set_settings(&self, s: &GroupSettings, now: UnixMillis) -> StoreResult<()> {
        self.svc.ports.business.groups.set_settings(self.tenant, self.topic, s, now).await
    }

    /// `user`'s subscription to the group, if any.
    pub(crate) async fn subscription(&self, user: UserId) -> StoreResult<Option<Subscription>> {
        self.svc.ports.subs.get_sub(self.tenant, self.topic, user).await
    }

    /// Every subscription to the group.
    pub(crate) async fn subscriptions(&self) -> StoreResult<Vec<Subscription>> {
        self.svc.ports.subs.list_topic_subs(self.tenant, self.topic).await
    }

    /// True if an admin removed `user` (who then comes back only through an admin).
    pub(crate) async fn was_removed(&self, user: UserId) -> StoreResult<bool> {
        self.svc.ports.subs.was_removed(self.tenant, self.topic, user).await
    }

    /// True if the group has as many subscribers as `limits.max_subscriber_count` allows.
    pub(crate) async fn is_full(&self) -> StoreResult<bool> {
        Ok(self.subscriptions().await?.len() >= self.svc.cfg.max_subscriber_count)
    }

    /// Stores `sub` as the new member's subscription.
    pub(crate) async fn subscribe(&self, sub: &Subscription) -> StoreResult<()> {
        self.svc.ports.subs.upsert_sub(self.tenant, sub).await
    }

    /// Ends `user`'s membership and drops their governance rows (role, mute). Someone else's removal is marked,
    /// so the user cannot rejoin through Tinode's `{sub}` on their own; a member leaving themselves is not. A
    /// subscription already gone is no error: the removal is what was asked.
    pub(crate) async fn remove_member(&self, user: UserId, by_self: bool, now: UnixMillis) -> StoreResult<()> {
        let subs = &self.svc.ports.subs;
        let removal = if by_self {
            subs.delete_sub(self.tenant, self.topic, user, now).await
        } else {
            subs.remove_sub(self.tenant, self.topic, user, now).await
        };
        match removal {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => return Err(e),
        }
        self.svc.ports.business.groups.forget_member(self.tenant, self.topic, user).await
    }

    /// Sets `user`'s role, within `max_admins`; true if it changed.
    pub(crate) async fn set_role(
        &self,
        user: UserId,
        role: GroupRole,
        by: UserId,
        max_admins: Option<u32>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        self.svc.ports.business.groups.set_role(self.tenant, self.topic, user, role, by, max_admins, now).await
    }

    /// Moves the business ownership from `from` (who must own the group) to `to`.
    pub(crate) async fn transfer_owner(&self, from: UserId, to: UserId, now: UnixMillis) -> StoreResult<()> {
        self.svc.ports.business.groups.transfer_owner(self.tenant, self.topic, from, to, now).await
    }

    /// Moves Tinode's side of ownership to `to`: the topic's owner, the `O` bit taken from `from` and full owner
    /// access given to `to`. Returns each changed member with its new effective mode, for the `{pres acs}`.
    pub(crate) async fn hand_over_tinode_owner(
        &self,
        from: UserId,
        to: UserId,
        now: UnixMillis,
    ) -> StoreResult<Vec<(UserId, AccessMode)>> {
        let update = TopicUpdate { updated: now, owner: Some(to), ..Default::default() };
        self.svc.ports.topics.update_topic(self.tenant, self.topic, &update).await?;
        let without_o = |m: AccessMode| AccessMode(m.0 & !AccessMode::OWNER.0);
        let mut changed = Vec::new();
        for (user, full) in [(from, None), (to, Some(AccessMode::OWNER_FULL))] {
            let Some(sub) = self.subscription(user).await? else { continue };
            let (want, given) = full.map_or((without_o(sub.want), without_o(sub.given)), |f| (f, f));
            self.svc.ports.subs.update_sub_mode(self.tenant, self.topic, user, want, given, now).await?;
            changed.push((user, want.and(given)));
        }
        Ok(changed)
    }

    /// Replaces the group's Tinode `public` (its profile, which every Tinode client shows); returns the members
    /// who read the group, to tell them.
    pub(crate) async fn set_public(&self, public: serde_json::Value, now: UnixMillis) -> StoreResult<Vec<UserId>> {
        let update = TopicUpdate { updated: now, public: Some(public), ..Default::default() };
        self.svc.ports.topics.update_topic(self.tenant, self.topic, &update).await?;
        let subs = self.subscriptions().await?;
        Ok(subs.into_iter().filter(|s| s.mode().has(AccessMode::READ)).map(|s| s.user).collect())
    }

    /// Mutes `user` (everyone but the admins with `None`) until `until` (for good with `None`).
    pub(crate) async fn mute(
        &self,
        user: Option<UserId>,
        by: UserId,
        reason: Option<&str>,
        until: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        self.svc.ports.business.groups.mute(self.tenant, self.topic, user, by, reason, until, now).await
    }

    /// Lifts the mute of `user` (of everyone with `None`); false if there was none.
    pub(crate) async fn unmute(&self, user: Option<UserId>) -> StoreResult<bool> {
        self.svc.ports.business.groups.unmute(self.tenant, self.topic, user).await
    }

    /// Files `user`'s join request (invited by `inviter`, if any); an already pending one is answered again.
    pub(crate) async fn request_join(
        &self,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<JoinOutcome> {
        let groups = &self.svc.ports.business.groups;
        groups.create_join_request(self.tenant, self.topic, user, inviter, message, now).await
    }

    /// Decides join request `id` once (cancelling is the requester's).
    pub(crate) async fn decide_join(
        &self,
        id: i64,
        by: UserId,
        decision: JoinDecision,
        now: UnixMillis,
    ) -> StoreResult<JoinRequest> {
        self.svc.ports.business.groups.decide_join_request(self.tenant, self.topic, id, by, decision, now).await
    }

    /// A page of the group's join requests with `status`, by id.
    pub(crate) async fn join_requests(
        &self,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<JoinRequest>> {
        self.svc.ports.business.groups.list_join_requests(self.tenant, self.topic, status, cursor, limit).await
    }

    /// The group's announcements as `viewer` sees them (with their read marks), pinned first.
    pub(crate) async fn announcements(&self, viewer: UserId, limit: usize) -> StoreResult<Vec<AnnouncementView>> {
        self.svc.ports.business.groups.list_announcements(self.tenant, self.topic, viewer, limit).await
    }

    /// Posts an announcement by `author`.
    pub(crate) async fn announce(
        &self,
        author: UserId,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        self.svc.ports.business.groups.add_announcement(self.tenant, self.topic, author, draft, now).await
    }

    /// Replaces announcement `id` (`NotFound` if there is none).
    pub(crate) async fn update_announcement(
        &self,
        id: i64,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        self.svc.ports.business.groups.update_announcement(self.tenant, self.topic, id, draft, now).await
    }

    /// Deletes announcement `id`; false if there was none.
    pub(crate) async fn delete_announcement(&self, id: i64, now: UnixMillis) -> StoreResult<bool> {
        self.svc.ports.business.groups.delete_announcement(self.tenant, self.topic, id, now).await
    }

    /// Marks announcement `id` read by `user`; true on the first read (`NotFound` if there is none).
    pub(crate) async fn mark_announcement_read(&self, id: i64, user: UserId, now: UnixMillis) -> StoreResult<bool> {
        self.svc.ports.business.groups.mark_announcement_read(self.tenant, self.topic, id, user, now).await
    }

    /// Whether a member snapshot cached at `at` may still serve at `now`: on one node every change drops it, so
    /// always; with other nodes, for as long as the member cache may be trusted past a missed bus event.
    pub(crate) fn snapshot_fresh(&self, at: UnixMillis, now: UnixMillis) -> bool {
        !self.svc.ports.bus.is_shared() || now - at < SHARED_MEMBERS_MAX_AGE_MS
    }
}
