//! Group governance: `group.*` commands for roles, ownership, mutes, removal, settings and the group profile.
//! Invites and join requests are in `joins.rs`, announcements and the member list in `members.rs`.
//!
//! The host guarantees what no rule may change (the group exists, the actor is a member, the owner cannot be
//! removed or muted, at most one owner, an admin limit checked atomically); the governance plugin decides who
//! may do what and fixes the parameters (the admin limit, the longest mute, whether an invite needs approval).
//! Every change drops the group's cached members and publish gate on every node before the command answers,
//! and is told to the group's online members and to the affected user's devices.

use super::group::{Group, load, settings_facts};
use super::{BizError, BizResult, Cx, body, time, ts};
use crate::delivery::event::Event;
use palaver_api::bodies as b;
use palaver_api::facts::{MemberRemoveFacts, MuteAllFacts, MuteSetFacts, ProfileFacts};
use palaver_api::facts::{RoleSetFacts, SettingsSetFacts};
use palaver_api::{CommandName as C, Facts, Reason};
use palaver_core::ports::{ADMIN_LIMIT, GroupRole, GroupSettings, JoinDecision, JoinPolicy, NOT_OWNER, OWNER_ROLE};
use palaver_core::{StoreError, UserId};
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

/// The member named by `key`, who must be subscribed to the group.
async fn target(cx: &Cx<'_>, g: &Group, key: &str) -> BizResult<UserId> {
    let user = cx.need_user(key)?;
    if cx.svc.governance(cx.tenant, g.name()).subscription(user).await?.is_none() {
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
    cx.svc.governance(cx.tenant, g.name()).remove_member(user, user == cx.actor, cx.now).await?;
    // The removed user's sessions leave the topic everywhere and learn it is gone (Tinode's own signals).
    let evict = Event::Evict { topic: g.name().to_owned(), user };
    cx.svc.dispatch(cx.tenant, evict, None, cx.from()).await;
    cx.invalidate(g.name()).await;
    cx.svc.summarize_members(cx.tenant, g.name()).await;
    let gone =
        MsgPres { topic: "me".into(), src: Some(g.name().to_owned()), what: "gone".into(), ..MsgPres::default() };
    cx.svc.dispatch(cx.tenant, Event::MePres { users: vec![user], pres: gone }, None, cx.from()).await;
    cx.svc.enqueue_sub(cx.tenant, user, g.name(), cx.from());
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
    let facts = RoleSetFacts { group: m.group, user: m.user, user_role: m.user_role, role: super::group::role(role) };
    let params = cx.ask(Facts::GroupRoleSet(facts)).await?;
    let max_admins = params.get("max_admins").and_then(Value::as_u64).map(|n| n.min(u64::from(u32::MAX)) as u32);
    let gov = cx.svc.governance(cx.tenant, g.name());
    let changed = match gov.set_role(user, role, cx.actor, max_admins, cx.now).await {
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
    match cx.svc.governance(cx.tenant, g.name()).transfer_owner(cx.actor, to, cx.now).await {
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
    let changed = cx.svc.governance(cx.tenant, g.name()).hand_over_tinode_owner(cx.actor, to, cx.now).await?;
    for (user, mode) in changed {
        let event = Event::Access { topic: g.name().to_owned(), user, mode };
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
    cx.svc.governance(cx.tenant, g.name()).mute(Some(user), cx.actor, reason, until, cx.now).await?;
    mute_changed(cx, &g, Some(user), true, until).await;
    Ok(body(&b::MuteSet { user: user.to_string(), muted: true, until: Some(until.map(time)) }))
}

async fn unmute(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let user = cx.need_user("user")?;
    cx.ask(Facts::GroupMuteClear(g.member(cx, user))).await?;
    if !cx.svc.governance(cx.tenant, g.name()).unmute(Some(user)).await? {
        return Err(BizError::new(Reason::NotMuted, format!("{user} is not muted")));
    }
    mute_changed(cx, &g, Some(user), false, None).await;
    Ok(body(&b::MuteSet { user: user.to_string(), muted: false, until: None }))
}

async fn mute_all(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let muted = cx.bool_arg("muted")?.ok_or_else(|| BizError::new(Reason::ArgumentRequired, "`muted` is required"))?;
    cx.ask(Facts::GroupMuteAll(MuteAllFacts { group: g.facts(cx), muted })).await?;
    let gov = cx.svc.governance(cx.tenant, g.name());
    if muted {
        gov.mute(None, cx.actor, cx.str_arg("reason"), None, cx.now).await?;
    } else {
        gov.unmute(None).await?;
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
    cx.svc.governance(cx.tenant, g.name()).set_settings(&s, cx.now).await?;
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
    let users = cx.svc.governance(cx.tenant, g.name()).set_public(public.clone(), cx.now).await?;
    let upd = MsgPres { topic: "me".into(), src: Some(g.name().to_owned()), what: "upd".into(), ..MsgPres::default() };
    cx.svc.dispatch(cx.tenant, Event::MePres { users, pres: upd }, None, cx.from()).await;
    cx.to_topic(g.name(), "group.profile.updated", &json!({ "topic": g.name(), "public": public }));
    Ok(body(&b::ProfileUpdated { topic: g.name().to_owned(), public }))
}

fn settings_body(s: &GroupSettings) -> b::GroupSettings {
    b::GroupSettings { join_policy: s.join_policy.as_str().to_owned(), members_invite: s.members_invite }
}
