//! A group as one command sees it: its topic, roles, settings and the actor's own subscription, loaded once per
//! command (roles are read fresh every time, so no answer rests on a role older than the command), and the
//! facts every governance rule is given about it.

use super::{BizError, BizResult, Cx};
use palaver_api::Reason;
use palaver_api::facts::{self as f, GroupFacts, MemberFacts};
use palaver_core::ports::{GroupRole, GroupSettings, JoinPolicy, RoleGrant};
use palaver_core::{AccessMode, Subscription, Topic, UserId};

/// A group as one command sees it.
pub(crate) struct Group {
    pub(crate) topic: Topic,
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
    pub(super) fn member(&self, cx: &Cx<'_>, user: UserId) -> MemberFacts {
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

pub(super) fn settings_facts(s: &GroupSettings) -> f::Settings {
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
    let gov = cx.svc.governance(cx.tenant, name);
    let topic = gov.active_topic().await?.ok_or_else(not_found)?;
    let roles = gov.roles(topic.owner, cx.now).await?;
    let settings = gov.settings().await?;
    let mine = gov.subscription(cx.actor).await?;
    // A subscription whose grant was taken away (Tinode's ban: given without J) is no membership either.
    if member && !cx.admin && !mine.as_ref().is_some_and(|s| s.given.has(AccessMode::JOIN)) {
        return Err(BizError::new(Reason::NotMember, "you are not a member of this group"));
    }
    Ok(Group { topic, roles, settings, mine })
}
