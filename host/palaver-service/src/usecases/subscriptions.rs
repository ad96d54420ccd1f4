//! Subscriptions: joining a group on its terms, leaving, being removed, invitations and mode changes within the
//! granter's rights, read and receive positions, and the per-user group limit.

use crate::error::{ServiceError, ServiceResult};
use crate::names::wire_name;
use crate::{Inner, now_millis};
use palaver_core::Seq;
use palaver_core::ports::{GateVerdict, JoinContext, JoinPolicy};
use palaver_core::{AccessMode, RecordState, SessionId, StoreError, Subscription, TenantId, Topic, TopicKind, UserId};

/// The subscription use cases of one tenant.
pub(crate) struct Subscriptions<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Subscriptions<'_> {
    /// `user`'s subscription to `stored`, if any.
    pub(crate) async fn get(&self, stored: &str, user: UserId) -> ServiceResult<Option<Subscription>> {
        Ok(self.svc.ports.subs.get_sub(self.tenant, stored, user).await?)
    }

    /// Every subscription of `user` (its groups and contacts).
    pub(crate) async fn of_user(&self, user: UserId) -> ServiceResult<Vec<Subscription>> {
        Ok(self.svc.ports.subs.list_user_subs(self.tenant, user).await?)
    }

    /// Every subscriber of `stored`.
    pub(crate) async fn of_topic(&self, stored: &str) -> ServiceResult<Vec<Subscription>> {
        Ok(self.svc.ports.subs.list_topic_subs(self.tenant, stored).await?)
    }

    /// Refuses to add `user` to one more group beyond `max_groups_per_user`: each membership costs the user's
    /// every login (the topics it joins) and the group's fanout.
    pub(crate) async fn check_group_count(&self, user: UserId) -> ServiceResult<()> {
        match self.at_group_limit(user).await? {
            Some(max) => Err(ServiceError::Policy(format!("too many groups: a user may belong to {max}"))),
            None => Ok(()),
        }
    }

    /// `Some(max)` when `user` already belongs to `max_groups_per_user` groups (0: no limit).
    pub(crate) async fn at_group_limit(&self, user: UserId) -> Result<Option<usize>, StoreError> {
        let tenant = self.tenant;
        let max = self.svc.cfg.max_groups_per_user;
        if max == 0 {
            return Ok(None);
        }
        let subs = self.svc.ports.subs.list_user_subs(tenant, user).await?;
        let groups = subs.iter().filter(|s| palaver_core::topic_kind(&s.topic) == Some(TopicKind::Group)).count();
        Ok((groups >= max).then_some(max))
    }

    /// `me` joins the group `name` (or, already a member, changes what it wants to `mode`). Tinode's rule: the
    /// group's default access must grant J; on top of it a removed member stays out until an approver invites
    /// them back, a join policy set through the group API holds, and the group and `me` stay within their
    /// limits.
    ///
    /// An anonymous account (`anon`) is given the group's `anon` default access instead of its `auth` one.
    pub(crate) async fn join_group(
        &self,
        me: UserId,
        name: &str,
        mode: Option<&str>,
        anon: bool,
        session: String,
    ) -> ServiceResult<Subscription> {
        let tenant = self.tenant;
        let topic = self.svc.ports.topics.get_topic(tenant, name).await?.ok_or(ServiceError::TopicNotFound)?;
        if topic.state != RecordState::Active {
            return Err(ServiceError::TopicNotFound);
        }
        let wanted = match mode {
            Some(m) => AccessMode::parse(m).map_err(|e| ServiceError::Malformed(e.to_string()))?,
            None => None,
        };
        if let Some(mut sub) = self.svc.ports.subs.get_sub(tenant, name, me).await? {
            if let Some(want) = wanted.filter(|w| *w != sub.want) {
                let now = now_millis();
                self.svc.ports.subs.update_sub_mode(tenant, name, me, want, sub.given, now).await?;
                sub.want = want;
                // The cached member lists (fanout's readers, the push worker's recipients) hold the old mode.
                let event =
                    crate::delivery::event::Event::Access { topic: name.to_owned(), user: me, mode: sub.mode() };
                self.svc.dispatch(tenant, event, None, Some(me)).await;
            }
            if !sub.mode().has(AccessMode::JOIN) {
                return Err(ServiceError::PermissionDenied);
            }
            return Ok(sub);
        }
        let given = if anon { topic.defacs.anon } else { topic.defacs.auth };
        if !given.has(AccessMode::JOIN) {
            return Err(ServiceError::PermissionDenied);
        }
        // A removed member stays out until an approver invites them back, and a join policy set through the
        // group API holds for Tinode's own join too: only an open group takes members at their word. A group
        // whose policy was never set follows Tinode's rule alone (its default access, checked above).
        if self.svc.ports.subs.was_removed(tenant, name, me).await? {
            return Err(ServiceError::Denied("you were removed from this group".into()));
        }
        let settings = self.svc.ports.business.groups.settings(tenant, name).await?;
        match settings.join_policy {
            _ if settings.updated == 0 => {}
            JoinPolicy::Open => {}
            JoinPolicy::Approval => {
                return Err(ServiceError::Denied("joining this group needs an admin's approval".into()));
            }
            JoinPolicy::Closed => return Err(ServiceError::Denied("this group takes no new members".into())),
        }
        let count = self.svc.ports.subs.list_topic_subs(tenant, name).await?.len();
        if count >= self.svc.cfg.max_subscriber_count {
            return Err(ServiceError::Policy("the group has reached its subscriber limit".into()));
        }
        self.check_group_count(me).await?;
        let given = self.admit_join(me, name, session, wanted, given).await?;
        let now = now_millis();
        let sub = Subscription {
            topic: name.to_owned(),
            user: me,
            created: now,
            updated: now,
            deleted: None,
            want: wanted.unwrap_or(given),
            given,
            read: 0,
            recv: 0,
            del_id: 0,
            private: None,
        };
        self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
        self.svc.members_changed(tenant, name, Some(me)).await;
        self.svc.summarize_members(tenant, name).await;
        Ok(sub)
    }

    /// Asks the join gates (plugins' `before-subscribe`) about `me` joining `name` on their own with `given`
    /// (asking for `wanted`): the mode to grant, `given` itself or narrower when a gate restricts it; `Rejected`
    /// with the gate's code and reason when one refuses. Nothing is asked while no gate runs for the tenant.
    /// Every self-join asks: `{sub}` here and the `group.join.request` command joining an open group; an invite or an approved request is an
    /// admin's decision and asks nothing.
    pub(crate) async fn admit_join(
        &self,
        me: UserId,
        name: &str,
        session: String,
        wanted: Option<AccessMode>,
        given: AccessMode,
    ) -> ServiceResult<AccessMode> {
        let gates = &self.svc.ports.gates;
        if !gates.gates_join(self.tenant) {
            return Ok(given);
        }
        let join = JoinContext {
            tenant: self.tenant,
            topic: name.to_owned(),
            kind: TopicKind::Group,
            user: me,
            session,
            node: self.svc.cfg.node_id.clone(),
            want: wanted.map(|w| w.to_string()).unwrap_or_default(),
            given: given.to_string(),
        };
        match gates.before_subscribe(&join).await {
            GateVerdict::Allow => Ok(given),
            GateVerdict::Reject { code, reason } => {
                Err(ServiceError::Rejected { code: palaver_proto::Code::from_number(code), reason })
            }
            // The runtime checked the mode is within `given`; the intersection keeps that true whatever a gate
            // implementation says.
            GateVerdict::Restrict { mode } => match AccessMode::parse(&mode) {
                Ok(Some(m)) => Ok(m.and(given)),
                _ => Err(ServiceError::Internal(format!("a join gate answered an unreadable mode {mode:?}"))),
            },
        }
    }

    /// `me` leaves `stored` for good (the owner of a group deletes it instead). Removes the user's subscription; every session of the user is detached and told the topic is gone.
    pub(crate) async fn unsubscribe(&self, me: UserId, stored: &str, wire: &str, skip: SessionId) -> ServiceResult<()> {
        let tenant = self.tenant;
        if let Some(topic) = self.svc.ports.topics.get_topic(tenant, stored).await?
            && topic.owner == Some(me)
        {
            // The owner deletes the group instead of walking away from it.
            return Err(ServiceError::PermissionDenied);
        }
        match self.svc.ports.subs.delete_sub(tenant, stored, me, now_millis()).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(ServiceError::NotFound),
            Err(e) => return Err(e.into()),
        }
        if stored.starts_with("grp") {
            self.svc.ports.business.groups.forget_member(tenant, stored, me).await?;
        }
        self.svc.evict(tenant, me, stored, Some(skip), Some(me)).await;
        self.svc.leave_online(tenant, me, stored).await;
        self.svc.members_changed(tenant, stored, Some(me)).await;
        if stored.starts_with("grp") {
            self.svc.summarize_members(tenant, stored).await;
        }
        self.svc.notify_gone(tenant, me, wire, Some(skip), Some(me)).await;
        Ok(())
    }

    /// Invites a user who is not a member (needs S): their subscription is given `mode` and wants what their
    /// own defaults allow of it, and they are told on `me`.
    pub(crate) async fn invite(
        &self,
        topic: &Topic,
        mine: &Subscription,
        target: UserId,
        mode: &str,
    ) -> ServiceResult<bool> {
        let tenant = self.tenant;
        if !mine.mode().has(AccessMode::SHARE) {
            return Err(ServiceError::PermissionDenied);
        }
        let user = self.svc.ports.users.get_user(tenant, target).await?.ok_or(ServiceError::UserNotFound)?;
        if user.state != RecordState::Active {
            // A suspended or deleted account is not there to be invited (a deleted one left every topic).
            return Err(ServiceError::UserNotFound);
        }
        let given = AccessMode::parse_with_base(mode, topic.defacs.auth)
            .map_err(|e| ServiceError::Malformed(e.to_string()))?
            .unwrap_or(topic.defacs.auth);
        let owner = topic.owner == Some(mine.user);
        if !given.grantable_by(AccessMode::NONE, mine.given, owner) {
            // An inviter cannot hand out more authority than they hold.
            return Err(ServiceError::PermissionDenied);
        }
        if !mine.mode().has(AccessMode::APPROVE) {
            // Anyone with S may share a group, unless its settings (set through the group API) keep invites to
            // admins; and only an approver lifts a removal by inviting the user back.
            let s = self.svc.ports.business.groups.settings(tenant, &topic.name).await?;
            if s.updated != 0 && !(s.members_invite && s.join_policy == JoinPolicy::Open) {
                return Err(ServiceError::Denied("only admins invite to this group".into()));
            }
            if self.svc.ports.subs.was_removed(tenant, &topic.name, target).await? {
                return Err(ServiceError::Denied("the user was removed from this group".into()));
            }
        }
        let count = self.svc.ports.subs.list_topic_subs(tenant, &topic.name).await?.len();
        if count >= self.svc.cfg.max_subscriber_count {
            return Err(ServiceError::Policy("the group has reached its subscriber limit".into()));
        }
        self.check_group_count(target).await?;
        let now = now_millis();
        let sub = Subscription {
            topic: topic.name.clone(),
            user: target,
            created: now,
            updated: now,
            deleted: None,
            want: user.defacs.auth.and(given),
            given,
            read: 0,
            recv: 0,
            del_id: 0,
            private: None,
        };
        self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
        self.svc.members_changed(tenant, &topic.name, Some(mine.user)).await;
        self.svc.summarize_members(tenant, &topic.name).await;
        let joined = crate::delivery::event::Event::Joined { topic: topic.name.clone(), user: target };
        self.svc.dispatch(tenant, joined, None, Some(mine.user)).await;
        self.svc.notify_acs(tenant, target, &topic.name, (sub.want, sub.given), Some(mine.user)).await;
        Ok(true)
    }

    /// Changes a subscription's mode: one's own `want`, or (with A) another member's `given`.
    pub(crate) async fn change_mode(
        &self,
        topic: &Topic,
        mine: &Subscription,
        target: UserId,
        mode: &str,
        wire: &str,
    ) -> ServiceResult<bool> {
        let tenant = self.tenant;
        let me = mine.user;
        let mut sub = if target == me {
            mine.clone()
        } else {
            if topic.kind != TopicKind::Group {
                return Err(ServiceError::PermissionDenied);
            }
            match self.svc.ports.subs.get_sub(tenant, &topic.name, target).await? {
                Some(s) if mine.mode().has(AccessMode::APPROVE) => s,
                Some(_) => return Err(ServiceError::PermissionDenied),
                None => return self.invite(topic, mine, target, mode).await,
            }
        };
        let base = if target == me { sub.want } else { sub.given };
        let new = AccessMode::parse_with_base(mode, base).map_err(|e| ServiceError::Malformed(e.to_string()))?;
        let Some(mut new) = new else { return Ok(false) };
        let owner = topic.owner == Some(target);
        let i_own = topic.owner == Some(me);
        if target != me && (owner || !new.grantable_by(base, mine.given, i_own)) {
            // Nobody changes the owner's grant, and what is given stays within the giver's own rights.
            return Err(ServiceError::PermissionDenied);
        }
        if target == me && !owner {
            // A member may not grant itself owner rights by wanting them.
            new = AccessMode(new.0 & !AccessMode::OWNER.0);
        }
        if target == me {
            sub.want = new
        } else {
            sub.given = new
        }
        if sub.want == base && target == me || sub.given == base && target != me {
            return Ok(false);
        }
        let now = now_millis();
        self.svc.ports.subs.update_sub_mode(tenant, &topic.name, target, sub.want, sub.given, now).await?;
        let event = crate::delivery::event::Event::Access { topic: topic.name.clone(), user: target, mode: sub.mode() };
        self.svc.dispatch(tenant, event, None, Some(me)).await;
        self.svc.notify_acs(tenant, target, &wire_name(&topic.name, target), (sub.want, sub.given), Some(me)).await;
        let _ = wire;
        Ok(true)
    }

    /// `me` (an approver, A) removes `target` from the group `stored`; the owner cannot be removed. The row is
    /// marked removed by someone else, so that the user cannot simply join again; its business role and mutes
    /// go with the membership, so a removed admin who is let back in is not an admin again. Every session of
    /// `target` is detached and told on `me`.
    pub(crate) async fn remove_member(
        &self,
        me: UserId,
        stored: &str,
        kind: TopicKind,
        target: UserId,
    ) -> ServiceResult<()> {
        let tenant = self.tenant;
        if kind != TopicKind::Group || target == me {
            return Err(ServiceError::PermissionDenied);
        }
        let topic = self.svc.ports.topics.get_topic(tenant, stored).await?.ok_or(ServiceError::TopicNotFound)?;
        let mine = self.svc.ports.subs.get_sub(tenant, stored, me).await?.ok_or(ServiceError::PermissionDenied)?;
        if !mine.mode().has(AccessMode::APPROVE) || topic.owner == Some(target) {
            return Err(ServiceError::PermissionDenied);
        }
        match self.svc.ports.subs.remove_sub(tenant, stored, target, now_millis()).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(ServiceError::UserNotFound),
            Err(e) => return Err(e.into()),
        }
        self.svc.ports.business.groups.forget_member(tenant, stored, target).await?;
        self.svc.evict(tenant, target, stored, None, Some(me)).await;
        self.svc.members_changed(tenant, stored, Some(me)).await;
        self.svc.summarize_members(tenant, stored).await;
        self.svc.notify_gone(tenant, target, stored, None, Some(me)).await;
        Ok(())
    }

    /// Deleting a P2P topic only removes `me`'s side of it: `me`'s sessions everywhere (but `skip`, which
    /// replies itself) are detached and told the topic is gone.
    pub(crate) async fn leave_p2p(&self, me: UserId, stored: &str, wire: &str, skip: SessionId) -> ServiceResult<()> {
        let tenant = self.tenant;
        match self.svc.ports.subs.delete_sub(tenant, stored, me, now_millis()).await {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
        self.svc.evict(tenant, me, stored, Some(skip), Some(me)).await;
        self.svc.hub.detach_user(tenant, stored, me);
        self.svc.leave_online(tenant, me, stored).await;
        self.svc.members_changed(tenant, stored, Some(me)).await;
        self.svc.notify_gone(tenant, me, wire, Some(skip), Some(me)).await;
        Ok(())
    }

    /// Sets `me`'s private note on `stored`: one column, on an active subscription only, so that it cannot
    /// bring back a subscription removed in the meantime.
    pub(crate) async fn set_private(
        &self,
        me: UserId,
        stored: &str,
        private: Option<&serde_json::Value>,
        updated: palaver_core::UnixMillis,
    ) -> ServiceResult<()> {
        self.svc.ports.subs.set_sub_private(self.tenant, stored, me, private, updated).await?;
        Ok(())
    }

    /// Moves `me`'s read (`read`) or receive position on `stored` to `seq`: a reader (R) only, never beyond the
    /// last message. Returns false when the position did not change (nothing to tell the other sessions).
    pub(crate) async fn mark(&self, me: UserId, stored: &str, read: bool, seq: Seq) -> ServiceResult<bool> {
        let tenant = self.tenant;
        let sub = self.svc.ports.subs.get_sub(tenant, stored, me).await?.ok_or(ServiceError::NotFound)?;
        if !sub.mode().has(AccessMode::READ) {
            return Err(ServiceError::PermissionDenied);
        }
        let topic = self.svc.ports.topics.get_topic(tenant, stored).await?.ok_or(ServiceError::TopicNotFound)?;
        if seq > topic.seq {
            return Err(ServiceError::Malformed("note.seq is beyond the last message".into()));
        }
        let (read_at, recv_at) = if read { (Some(seq), None) } else { (None, Some(seq)) };
        let (new_recv, new_read) = self.svc.ports.subs.update_sub_cursors(tenant, stored, me, recv_at, read_at).await?;
        let unchanged = if read { new_read == sub.read } else { new_recv == sub.recv };
        Ok(!unchanged)
    }
}

/// A fresh subscription with nothing read.
pub(super) fn new_sub(topic: &str, user: UserId, want: AccessMode, given: AccessMode, now: i64) -> Subscription {
    Subscription {
        topic: topic.to_owned(),
        user,
        created: now,
        updated: now,
        deleted: None,
        want,
        given,
        read: 0,
        recv: 0,
        del_id: 0,
        private: None,
    }
}
