//! Group governance: `group.*` commands for roles, ownership, mutes, removal, settings and the group profile.
//! Invites and join requests are in `joins.rs`, announcements and the member list in `members.rs`.
//!
//! The host guarantees what no rule may change (the group exists, the actor is a member, the owner cannot be
//! removed or muted, at most one owner, an admin limit checked atomically); the governance plugin decides who
//! may do what and fixes the parameters (the admin limit, the longest mute, whether an invite needs approval).
//! Every change drops the group's cached members and publish gate on every node before the command answers,
//! and is told to the group's online members and to the affected user's devices.

use super::{BizError, BizResult, Cx, ts};
use crate::realtime::Event;
use palaver_core::ports::{
    ADMIN_LIMIT, GroupRole, GroupSettings, JoinDecision, JoinPolicy, NOT_OWNER, OWNER_ROLE, RoleGrant,
};
use palaver_core::{AccessMode, RecordState, StoreError, Subscription, Topic, UserId};
use palaver_proto::MsgPres;
use serde_json::{Value, json};

pub(super) async fn run(cx: &Cx<'_>) -> BizResult<Value> {
    match cx.command {
        "group.member.list" => super::members::list(cx).await,
        "group.member.remove" => remove(cx).await,
        "group.role.set" => set_role(cx).await,
        "group.owner.transfer" => transfer(cx).await,
        "group.mute.set" => mute(cx).await,
        "group.mute.clear" => unmute(cx).await,
        "group.mute.all" => mute_all(cx).await,
        "group.invite" => super::joins::invite(cx).await,
        "group.join.request" => super::joins::join(cx).await,
        "group.join.list" => super::joins::list_joins(cx).await,
        "group.join.approve" => super::joins::decide_join(cx, JoinDecision::Approve).await,
        "group.join.reject" => super::joins::decide_join(cx, JoinDecision::Reject).await,
        "group.join.cancel" => super::joins::decide_join(cx, JoinDecision::Cancel).await,
        "group.settings.get" => get_settings(cx).await,
        "group.settings.set" => set_settings(cx).await,
        "group.profile.update" => profile(cx).await,
        "group.announcement.list"
        | "group.announcement.create"
        | "group.announcement.update"
        | "group.announcement.delete"
        | "group.announcement.read" => super::members::announcements(cx).await,
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

    /// The facts every governance rule gets, with the command's own.
    pub(super) fn facts(&self, cx: &Cx<'_>, extra: Value) -> Value {
        let mut f = json!({
            "topic": self.topic.name,
            "actor_role": self.role_of(cx.actor).as_str(),
            "owner": self.owner().map(|u| u.to_string()),
            "admins": self.roles.iter().filter(|g| g.role == GroupRole::Admin).count(),
            "join_policy": self.settings.join_policy.as_str(),
            "members_invite": self.settings.members_invite,
        });
        if let (Value::Object(f), Value::Object(extra)) = (&mut f, extra) {
            f.extend(extra);
        }
        f
    }
}

/// Loads the group named by the `topic` argument; with `member`, the actor must be one of its members.
pub(super) async fn load(cx: &Cx<'_>, member: bool) -> BizResult<Group> {
    let name = cx.need_str("topic")?;
    let not_found = || BizError::new(404, "GROUP_NOT_FOUND", format!("no group {name}"));
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
    if member && mine.is_none() {
        return Err(BizError::new(403, "NOT_MEMBER", "you are not a member of this group"));
    }
    Ok(Group { topic, roles, settings, mine })
}

/// The member named by `key`, who must be subscribed to the group.
async fn target(cx: &Cx<'_>, g: &Group, key: &str) -> BizResult<UserId> {
    let user = cx.need_user(key)?;
    if cx.svc.ports.subs.get_sub(cx.tenant, g.name(), user).await?.is_none() {
        return Err(BizError::new(404, "NOT_MEMBER", format!("{user} is not a member of this group")));
    }
    Ok(user)
}

fn protect_owner(g: &Group, user: UserId, what: &str) -> BizResult<()> {
    if g.role_of(user) == GroupRole::Owner {
        return Err(BizError::new(403, "OWNER_PROTECTED", format!("the owner cannot be {what}")));
    }
    Ok(())
}

async fn remove(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    protect_owner(&g, user, "removed")?;
    let facts = g.facts(
        cx,
        json!({ "user": user.to_string(), "user_role": g.role_of(user).as_str(),
        "self": user == cx.actor }),
    );
    cx.ask(facts).await?;
    match cx.svc.ports.subs.delete_sub(cx.tenant, g.name(), user, cx.now).await {
        Ok(()) | Err(StoreError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    cx.svc.ports.business.groups.forget_member(cx.tenant, g.name(), user).await?;
    // The removed user's sessions leave the topic everywhere and learn it is gone (Tinode's own signals).
    let evict = Event::Evict { topic: g.name().to_owned(), user };
    cx.svc.dispatch(cx.tenant, evict, None, Some(cx.actor)).await;
    cx.invalidate(g.name()).await;
    let gone =
        MsgPres { topic: "me".into(), src: Some(g.name().to_owned()), what: "gone".into(), ..MsgPres::default() };
    cx.svc.dispatch(cx.tenant, Event::MePres { users: vec![user], pres: gone }, None, Some(cx.actor)).await;
    let payload = json!({ "topic": g.name(), "user_id": user.to_string(), "by": cx.actor.to_string() });
    cx.to_topic(g.name(), "group.member.removed", &payload);
    cx.to_user(user, "group.member.removed", &payload);
    if user != cx.actor {
        cx.notify(user, "group_removed", payload.clone(), Some(g.name())).await;
    }
    Ok(json!({ "removed": user.to_string() }))
}

async fn set_role(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    let role = match cx.need_str("role")? {
        "admin" => GroupRole::Admin,
        "member" => GroupRole::Member,
        "owner" => return Err(BizError::new(400, "USE_TRANSFER", "ownership moves with POST /groups/{topic}/owner")),
        other => return Err(BizError::new(400, "BAD_ROLE", format!("unknown role {other}"))),
    };
    protect_owner(&g, user, "given another role")?;
    let facts = g.facts(
        cx,
        json!({ "user": user.to_string(), "user_role": g.role_of(user).as_str(),
        "role": role.as_str() }),
    );
    let params = cx.ask(facts).await?;
    let max_admins = params.get("max_admins").and_then(Value::as_u64).map(|n| n.min(u64::from(u32::MAX)) as u32);
    let groups = &cx.svc.ports.business.groups;
    let changed = match groups.set_role(cx.tenant, g.name(), user, role, cx.actor, max_admins, cx.now).await {
        Ok(c) => c,
        Err(StoreError::Conflict(why)) if why == ADMIN_LIMIT => {
            let max = max_admins.unwrap_or_default();
            return Err(BizError::new(409, "ADMIN_LIMIT", format!("a group has at most {max} admins")));
        }
        Err(StoreError::Conflict(why)) if why == OWNER_ROLE => {
            return Err(BizError::new(403, "OWNER_PROTECTED", "the owner's role changes only by a transfer"));
        }
        Err(e) => return Err(e.into()),
    };
    if changed {
        role_changed(cx, &g, user, role).await;
    }
    Ok(json!({ "user": user.to_string(), "role": role.as_str(), "changed": changed }))
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
        return Err(BizError::new(400, "SELF", "you own the group already"));
    }
    cx.ask(g.facts(cx, json!({ "user": to.to_string(), "user_role": g.role_of(to).as_str() }))).await?;
    match cx.svc.ports.business.groups.transfer_owner(cx.tenant, g.name(), cx.actor, to, cx.now).await {
        Ok(()) => {}
        Err(StoreError::Conflict(why)) if why == NOT_OWNER => {
            return Err(BizError::new(403, "NOT_OWNER", "only the owner can hand the group over"));
        }
        Err(e) => return Err(e.into()),
    }
    role_changed(cx, &g, to, GroupRole::Owner).await;
    role_changed(cx, &g, cx.actor, GroupRole::Admin).await;
    Ok(json!({ "owner": to.to_string() }))
}

async fn mute(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = target(cx, &g, "user").await?;
    protect_owner(&g, user, "muted")?;
    let duration =
        match cx.args.get("duration_ms") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|d| *d > 0).ok_or_else(|| {
                BizError::new(400, "BAD_DURATION", "`duration_ms` is a positive number of milliseconds")
            })?),
        };
    let facts = g.facts(
        cx,
        json!({ "user": user.to_string(), "user_role": g.role_of(user).as_str(),
        "duration_ms": duration }),
    );
    cx.ask(facts).await?;
    let until = duration.map(|d| cx.now.saturating_add(d));
    let reason = cx.str_arg("reason");
    cx.svc.ports.business.groups.mute(cx.tenant, g.name(), Some(user), cx.actor, reason, until, cx.now).await?;
    mute_changed(cx, &g, Some(user), true, until).await;
    Ok(json!({ "user": user.to_string(), "muted": true, "until": until.map(ts) }))
}

async fn unmute(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = cx.need_user("user")?;
    cx.ask(g.facts(cx, json!({ "user": user.to_string(), "user_role": g.role_of(user).as_str() }))).await?;
    if !cx.svc.ports.business.groups.unmute(cx.tenant, g.name(), Some(user)).await? {
        return Err(BizError::new(404, "NOT_MUTED", format!("{user} is not muted")));
    }
    mute_changed(cx, &g, Some(user), false, None).await;
    Ok(json!({ "user": user.to_string(), "muted": false }))
}

async fn mute_all(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let muted = cx.bool_arg("muted")?.ok_or_else(|| BizError::new(400, "ARGUMENT_REQUIRED", "`muted` is required"))?;
    cx.ask(g.facts(cx, json!({ "muted": muted }))).await?;
    let groups = &cx.svc.ports.business.groups;
    if muted {
        groups.mute(cx.tenant, g.name(), None, cx.actor, cx.str_arg("reason"), None, cx.now).await?;
    } else {
        groups.unmute(cx.tenant, g.name(), None).await?;
    }
    mute_changed(cx, &g, None, muted, None).await;
    Ok(json!({ "all": true, "muted": muted }))
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
    cx.ask(g.facts(cx, json!({}))).await?;
    Ok(settings_json(&g.settings))
}

async fn set_settings(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let mut s = g.settings.clone();
    if let Some(p) = cx.str_arg("join_policy") {
        s.join_policy = JoinPolicy::parse(p)
            .ok_or_else(|| BizError::new(400, "BAD_POLICY", "join_policy: open, approval or closed"))?;
    }
    if let Some(b) = cx.bool_arg("members_invite")? {
        s.members_invite = b;
    }
    cx.ask(g.facts(cx, json!({ "new": settings_json(&s) }))).await?;
    cx.svc.ports.business.groups.set_settings(cx.tenant, g.name(), &s, cx.now).await?;
    let body = settings_json(&s);
    cx.to_topic(g.name(), "group.settings.updated", &json!({ "topic": g.name(), "settings": body }));
    Ok(body)
}

async fn profile(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let (name, avatar, intro) = (cx.str_arg("name"), cx.str_arg("avatar"), cx.str_arg("intro"));
    if name.is_none() && avatar.is_none() && intro.is_none() {
        return Err(BizError::new(400, "NOTHING_TO_CHANGE", "give `name`, `avatar` or `intro`"));
    }
    let chars = |s: Option<&str>| s.map_or(0, |s| s.chars().count());
    cx.ask(g.facts(cx, json!({ "name_chars": chars(name), "intro_chars": chars(intro) }))).await?;
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
    cx.svc.dispatch(cx.tenant, Event::MePres { users, pres: upd }, None, Some(cx.actor)).await;
    cx.to_topic(g.name(), "group.profile.updated", &json!({ "topic": g.name(), "public": public }));
    Ok(json!({ "topic": g.name(), "public": public }))
}

fn settings_json(s: &GroupSettings) -> Value {
    json!({ "join_policy": s.join_policy.as_str(), "members_invite": s.members_invite })
}
