//! Group governance: `group.*` commands for roles, ownership, mutes, removal, settings and the group profile.
//! Invites and join requests are in `joins.rs`, announcements and the member list in `members.rs`.
//!
//! The host guarantees what no rule may change (the group exists, the actor is a member, the owner cannot be
//! removed or muted, at most one owner, an admin limit checked atomically); the governance plugin decides who
//! may do what and fixes the parameters (the admin limit, the longest mute, whether an invite needs approval).
//! Every change drops the group's cached members and publish gate on every node before the command answers,
//! and is told to the group's online members and to the affected user's devices.

use super::{BizError, BizResult, Cx, body, time, ts};
use crate::delivery::dispatch::Event;
use palaver_api::bodies as b;
use palaver_api::facts::{
    self as f, GroupFacts, MemberFacts, MemberRemoveFacts, MuteAllFacts, MuteSetFacts, ProfileFacts,
};
use palaver_api::facts::{RoleSetFacts, SettingsSetFacts};
use palaver_api::{CommandName as C, Facts, Reason};
use palaver_core::ports::{
    ADMIN_LIMIT, GroupRole, GroupSettings, JoinDecision, JoinPolicy, NOT_OWNER, OWNER_ROLE, RoleGrant,
};
use palaver_core::{AccessMode, RecordState, StoreError, Subscription, Topic, TopicUpdate, UserId};
use palaver_proto::MsgPres;
use serde_json::{Value, json};

pub(super) async fn run(cx: &Cx<'_>) -> BizResult<Value> {
    match cx.command {
        C::GroupMemberList => super::members::list(cx).await,
        C::GroupMemberRemove => remove(cx).await,
        C::GroupRoleSet => set_role(cx).await,
        C::GroupOwnerTransfer => transfer(cx).await,
        C::GroupMuteSet => mute(cx).await,
        C::GroupMuteClear => unmute(cx).await,
        C::GroupMuteAll => mute_all(cx).await,
        C::GroupInvite => super::joins::invite(cx).await,
        C::GroupJoinRequest => super::joins::join(cx).await,
        C::GroupJoinList => super::joins::list_joins(cx).await,
        C::GroupJoinApprove => super::joins::decide_join(cx, JoinDecision::Approve).await,
        C::GroupJoinReject => super::joins::decide_join(cx, JoinDecision::Reject).await,
        C::GroupJoinCancel => super::joins::decide_join(cx, JoinDecision::Cancel).await,
        C::GroupSettingsGet => get_settings(cx).await,
        C::GroupSettingsSet => set_settings(cx).await,
        C::GroupProfileUpdate => profile(cx).await,
        C::GroupAnnouncementList
        | C::GroupAnnouncementCreate
        | C::GroupAnnouncementUpdate
        | C::GroupAnnouncementDelete
        | C::GroupAnnouncementRead => super::members::announcements(cx).await,
        other => Err(super::unknown(other)),
    }
}

/// A group as one command sees it.
pub(super) struct Group {
    pub(super) topic: Topic,
    pub(super) roles: Vec<RoleGrant>,
    pub(super) settings: GroupSettings,
    /// The actor's subscription, if they are a member.
    pub(super) mine: Option<Subscription>,
}

impl Group {
    pub(super) fn name(&self) -> &str {
        &self.topic.name
    }

    pub(super) fn role_of(&self, user: UserId) -> GroupRole {
        self.roles.iter().find(|g| g.user == user).map_or(GroupRole::Member, |g| g.role)
    }

    fn owner(&self) -> Option<UserId> {
        self.roles.iter().find(|g| g.role == GroupRole::Owner).map(|g| g.user)
    }

    /// The facts every governance rule gets.
    pub(super) fn facts(&self, cx: &Cx<'_>) -> f::Group {
        f::Group {
            topic: self.topic.name.clone(),
            actor_role: role(self.role_of(cx.actor)),
            owner: self.owner().map(|u| u.to_string()),
            admins: self.roles.iter().filter(|g| g.role == GroupRole::Admin).count() as u64,
            settings: settings_facts(&self.settings),
        }
    }

    /// The group's facts alone.
    pub(super) fn only(&self, cx: &Cx<'_>) -> GroupFacts {
        GroupFacts { group: self.facts(cx) }
    }

    /// The facts of a command about one member.
    fn member(&self, cx: &Cx<'_>, user: UserId) -> MemberFacts {
        MemberFacts { group: self.facts(cx), user: user.to_string(), user_role: role(self.role_of(user)) }
    }
}

/// A role as the rules see it.
pub(super) fn role(r: GroupRole) -> f::Role {
    match r {
        GroupRole::Owner => f::Role::Owner,
        GroupRole::Admin => f::Role::Admin,
        GroupRole::Member => f::Role::Member,
    }
}

fn settings_facts(s: &GroupSettings) -> f::Settings {
    let join_policy = match s.join_policy {
        JoinPolicy::Open => f::JoinPolicy::Open,
        JoinPolicy::Approval => f::JoinPolicy::Approval,
        JoinPolicy::Closed => f::JoinPolicy::Closed,
    };
    f::Settings { join_policy, members_invite: s.members_invite }
}

/// Loads the group named by the `topic` argument; with `member`, the actor must be one of its members.
pub(super) async fn load(cx: &Cx<'_>, member: bool) -> BizResult<Group> {
    let name = cx.need_str("topic")?;
    let not_found = || BizError::new(Reason::GroupNotFound, format!("no group {name}"));
    if !name.starts_with("grp") {
        return Err(not_found());
    }
    let ports = &cx.svc.ports;
    let topic = ports.topics.get_topic(cx.tenant, name).await?.filter(|t| t.state == RecordState::Active);
    let topic = topic.ok_or_else(not_found)?;
    let groups = &ports.business.groups;
    let mut roles = groups.roles(cx.tenant, name).await?;
    // Groups created over Tinode's protocol have an owner there (the creator) and no governance rows yet.
    if !roles.iter().any(|g| g.role == GroupRole::Owner)
        && let Some(owner) = topic.owner
    {
        groups.ensure_owner(cx.tenant, name, owner, cx.now).await?;
        roles = groups.roles(cx.tenant, name).await?;
    }
    let settings = groups.settings(cx.tenant, name).await?;
    let mine = ports.subs.get_sub(cx.tenant, name, cx.actor).await?;
    // A subscription whose grant was taken away (Tinode's ban: given without J) is no membership either.
    if member && !cx.admin && !mine.as_ref().is_some_and(|s| s.given.has(AccessMode::JOIN)) {
        return Err(BizError::new(Reason::NotMember, "you are not a member of this group"));
    }
    Ok(Group { topic, roles, settings, mine })
}

/// The member named by `key`, who must be subscribed to the group.
async fn target(cx: &Cx<'_>, g: &Group, key: &str) -> BizResult<UserId> {
    let user = cx.need_user(key)?;
    if cx.svc.ports.subs.get_sub(cx.tenant, g.name(), user).await?.is_none() {
        return Err(BizError::new(Reason::TargetNotMember, format!("{user} is not a member of this group")));
    }
    Ok(user)
}

fn protect_owner(g: &Group, user: UserId, what: &str) -> BizResult<()> {
    if g.role_of(user) == GroupRole::Owner {
        return Err(BizError::new(Reason::OwnerProtected, format!("the owner cannot be {what}")));
    }
    Ok(())
}

async fn remove(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    protect_owner(&g, user, "removed")?;
    let m = g.member(cx, user);
    let facts = MemberRemoveFacts { group: m.group, user: m.user, user_role: m.user_role, leaving: user == cx.actor };
    cx.ask(Facts::GroupMemberRemove(facts)).await?;
    // Someone else's removal is marked, so the user cannot rejoin through Tinode's `{sub}` on their own; a
    // member leaving themselves is not.
    let removal = if user == cx.actor {
        cx.svc.ports.subs.delete_sub(cx.tenant, g.name(), user, cx.now).await
    } else {
        cx.svc.ports.subs.remove_sub(cx.tenant, g.name(), user, cx.now).await
    };
    match removal {
        Ok(()) | Err(StoreError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    cx.svc.ports.business.groups.forget_member(cx.tenant, g.name(), user).await?;
    // The removed user's sessions leave the topic everywhere and learn it is gone (Tinode's own signals).
    let evict = Event::Evict { topic: g.name().to_owned(), user };
    cx.svc.dispatch(cx.tenant, evict, None, cx.from()).await;
    cx.invalidate(g.name()).await;
    cx.svc.summarize_members(cx.tenant, g.name()).await;
    let gone =
        MsgPres { topic: "me".into(), src: Some(g.name().to_owned()), what: "gone".into(), ..MsgPres::default() };
    cx.svc.dispatch(cx.tenant, Event::MePres { users: vec![user], pres: gone }, None, cx.from()).await;
    let payload = json!({ "topic": g.name(), "user_id": user.to_string(), "by": cx.actor.to_string() });
    cx.to_topic(g.name(), "group.member.removed", &payload);
    cx.to_user(user, "group.member.removed", &payload);
    if user != cx.actor {
        cx.notify(user, "group_removed", payload.clone(), Some(g.name())).await;
    }
    Ok(body(&b::MemberRemoved { removed: user.to_string() }))
}

async fn set_role(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    let role = match cx.need_str("role")? {
        "admin" => GroupRole::Admin,
        "member" => GroupRole::Member,
        "owner" => return Err(BizError::new(Reason::UseTransfer, "ownership moves with POST /groups/{topic}/owner")),
        other => return Err(BizError::new(Reason::BadRole, format!("unknown role {other}"))),
    };
    protect_owner(&g, user, "given another role")?;
    let m = g.member(cx, user);
    let facts = RoleSetFacts { group: m.group, user: m.user, user_role: m.user_role, role: self::role(role) };
    let params = cx.ask(Facts::GroupRoleSet(facts)).await?;
    let max_admins = params.get("max_admins").and_then(Value::as_u64).map(|n| n.min(u64::from(u32::MAX)) as u32);
    let groups = &cx.svc.ports.business.groups;
    let changed = match groups.set_role(cx.tenant, g.name(), user, role, cx.actor, max_admins, cx.now).await {
        Ok(c) => c,
        Err(StoreError::Conflict(why)) if why == ADMIN_LIMIT => {
            let max = max_admins.unwrap_or_default();
            return Err(BizError::new(Reason::AdminLimit, format!("a group has at most {max} admins")));
        }
        Err(StoreError::Conflict(why)) if why == OWNER_ROLE => {
            return Err(BizError::new(Reason::OwnerProtected, "the owner's role changes only by a transfer"));
        }
        Err(e) => return Err(e.into()),
    };
    if changed {
        role_changed(cx, &g, user, role).await;
    }
    Ok(body(&b::RoleSet { user: user.to_string(), role: role.as_str().to_owned(), changed }))
}

async fn role_changed(cx: &Cx<'_>, g: &Group, user: UserId, role: GroupRole) {
    cx.invalidate(g.name()).await;
    let payload = json!({ "topic": g.name(), "user_id": user.to_string(), "role": role.as_str() });
    cx.to_topic(g.name(), "group.role.updated", &payload);
    cx.to_user(user, "group.role.updated", &payload);
    cx.notify(user, "group_role", payload, Some(g.name())).await;
}

async fn transfer(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let to = target(cx, &g, "user").await?;
    if to == cx.actor {
        return Err(BizError::new(Reason::SelfTarget, "you own the group already"));
    }
    cx.ask(Facts::GroupOwnerTransfer(g.member(cx, to))).await?;
    match cx.svc.ports.business.groups.transfer_owner(cx.tenant, g.name(), cx.actor, to, cx.now).await {
        Ok(()) => {}
        Err(StoreError::Conflict(why)) if why == NOT_OWNER => {
            return Err(BizError::new(Reason::NotOwner, "only the owner can hand the group over"));
        }
        Err(e) => return Err(e.into()),
    }
    hand_over_tinode_ownership(cx, &g, to).await?;
    role_changed(cx, &g, to, GroupRole::Owner).await;
    role_changed(cx, &g, cx.actor, GroupRole::Admin).await;
    Ok(body(&b::OwnerTransferred { owner: to.to_string() }))
}

/// Moves Tinode's side of ownership with the business one: the topic's owner and the `O` bit, so that the old
/// owner keeps no owner's powers over `{set}` and `{del topic}` and the new one gains them.
async fn hand_over_tinode_ownership(cx: &Cx<'_>, g: &Group, to: UserId) -> BizResult<()> {
    let ports = &cx.svc.ports;
    let update =
        TopicUpdate { updated: cx.now, public: None, trusted: None, tags: None, defacs: None, owner: Some(to) };
    ports.topics.update_topic(cx.tenant, g.name(), &update).await?;
    let without_o = |m: AccessMode| AccessMode(m.0 & !AccessMode::OWNER.0);
    let changes = [(cx.actor, None), (to, Some(AccessMode::OWNER_FULL))];
    for (user, full) in changes {
        let Some(sub) = ports.subs.get_sub(cx.tenant, g.name(), user).await? else { continue };
        let (want, given) = full.map_or((without_o(sub.want), without_o(sub.given)), |f| (f, f));
        ports.subs.update_sub_mode(cx.tenant, g.name(), user, want, given, cx.now).await?;
        let event = Event::Access { topic: g.name().to_owned(), user, mode: want.and(given) };
        cx.svc.dispatch(cx.tenant, event, None, cx.from()).await;
    }
    cx.invalidate(g.name()).await;
    Ok(())
}

async fn mute(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    protect_owner(&g, user, "muted")?;
    let duration =
        match cx.args.get("duration_ms") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|d| *d > 0).ok_or_else(|| {
                BizError::new(Reason::BadDuration, "`duration_ms` is a positive number of milliseconds")
            })?),
        };
    let m = g.member(cx, user);
    let facts = MuteSetFacts { group: m.group, user: m.user, user_role: m.user_role, duration_ms: duration };
    cx.ask(Facts::GroupMuteSet(facts)).await?;
    let until = duration.map(|d| cx.now.saturating_add(d));
    let reason = cx.str_arg("reason");
    cx.svc.ports.business.groups.mute(cx.tenant, g.name(), Some(user), cx.actor, reason, until, cx.now).await?;
    mute_changed(cx, &g, Some(user), true, until).await;
    Ok(body(&b::MuteSet { user: user.to_string(), muted: true, until: Some(until.map(time)) }))
}

async fn unmute(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = cx.need_user("user")?;
    cx.ask(Facts::GroupMuteClear(g.member(cx, user))).await?;
    if !cx.svc.ports.business.groups.unmute(cx.tenant, g.name(), Some(user)).await? {
        return Err(BizError::new(Reason::NotMuted, format!("{user} is not muted")));
    }
    mute_changed(cx, &g, Some(user), false, None).await;
    Ok(body(&b::MuteSet { user: user.to_string(), muted: false, until: None }))
}

async fn mute_all(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let muted = cx.bool_arg("muted")?.ok_or_else(|| BizError::new(Reason::ArgumentRequired, "`muted` is required"))?;
    cx.ask(Facts::GroupMuteAll(MuteAllFacts { group: g.facts(cx), muted })).await?;
    let groups = &cx.svc.ports.business.groups;
    if muted {
        groups.mute(cx.tenant, g.name(), None, cx.actor, cx.str_arg("reason"), None, cx.now).await?;
    } else {
        groups.unmute(cx.tenant, g.name(), None).await?;
    }
    mute_changed(cx, &g, None, muted, None).await;
    Ok(body(&b::MuteAllSet { all: true, muted }))
}

async fn mute_changed(cx: &Cx<'_>, g: &Group, user: Option<UserId>, muted: bool, until: Option<i64>) {
    cx.invalidate(g.name()).await;
    let payload = json!({ "topic": g.name(), "user_id": user.map(|u| u.to_string()), "all": user.is_none(),
        "muted": muted, "until": until.map(ts) });
    cx.to_topic(g.name(), "group.mute.updated", &payload);
    if let Some(u) = user {
        cx.to_user(u, "group.mute.updated", &payload);
    }
}

async fn get_settings(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    cx.ask(Facts::GroupSettingsGet(g.only(cx))).await?;
    Ok(body(&settings_body(&g.settings)))
}

async fn set_settings(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let mut s = g.settings.clone();
    if let Some(p) = cx.str_arg("join_policy") {
        s.join_policy = JoinPolicy::parse(p)
            .ok_or_else(|| BizError::new(Reason::BadPolicy, "join_policy: open, approval or closed"))?;
    }
    if let Some(b) = cx.bool_arg("members_invite")? {
        s.members_invite = b;
    }
    cx.ask(Facts::GroupSettingsSet(SettingsSetFacts { group: g.facts(cx), new: settings_facts(&s) })).await?;
    cx.svc.ports.business.groups.set_settings(cx.tenant, g.name(), &s, cx.now).await?;
    let settings = body(&settings_body(&s));
    cx.to_topic(g.name(), "group.settings.updated", &json!({ "topic": g.name(), "settings": settings }));
    Ok(settings)
}

async fn profile(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let (name, avatar, intro) = (cx.str_arg("name"), cx.str_arg("avatar"), cx.str_arg("intro"));
    if name.is_none() && avatar.is_none() && intro.is_none() {
        return Err(BizError::new(Reason::NothingToChange, "give `name`, `avatar` or `intro`"));
    }
    let chars = |s: Option<&str>| s.map_or(0, |s| s.chars().count() as u64);
    let facts = ProfileFacts { group: g.facts(cx), name_chars: chars(name), intro_chars: chars(intro) };
    cx.ask(Facts::GroupProfileUpdate(facts)).await?;
    // The group profile is Tinode's `public`, so that every Tinode client shows the change.
    let mut public = g.topic.public.clone().filter(Value::is_object).unwrap_or_else(|| json!({}));
    if let Some(n) = name {
        public["fn"] = json!(n);
    }
    if let Some(a) = avatar {
        public["photo"] = json!({ "ref": a });
    }
    if let Some(i) = intro {
        public["note"] = json!(i);
    }
    let update = palaver_core::TopicUpdate { updated: cx.now, public: Some(public.clone()), ..Default::default() };
    cx.svc.ports.topics.update_topic(cx.tenant, g.name(), &update).await?;
    let subs = cx.svc.ports.subs.list_topic_subs(cx.tenant, g.name()).await?;
    let upd = MsgPres { topic: "me".into(), src: Some(g.name().to_owned()), what: "upd".into(), ..MsgPres::default() };
    let users = subs.into_iter().filter(|s| s.mode().has(AccessMode::READ)).map(|s| s.user).collect();
    cx.svc.dispatch(cx.tenant, Event::MePres { users, pres: upd }, None, cx.from()).await;
    cx.to_topic(g.name(), "group.profile.updated", &json!({ "topic": g.name(), "public": public }));
    Ok(body(&b::ProfileUpdated { topic: g.name().to_owned(), public }))
}

fn settings_body(s: &GroupSettings) -> b::GroupSettings {
    b::GroupSettings { join_policy: s.join_policy.as_str().to_owned(), members_invite: s.members_invite }
}
