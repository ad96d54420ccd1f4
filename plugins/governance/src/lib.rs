//! Palaver's group governance plugin: who may manage a group's roles, mutes, members, join requests,
//! announcements, settings and profile, and the limits that apply, per tenant.
//!
//! The host keeps the governance state and enforces what no rule may change (the owner cannot be removed or
//! muted, at most one owner, the admin limit checked atomically). Before each `group.*` command it sends this
//! plugin the arguments and the facts (`{"args": …, "facts": {"actor_role": …, "user_role": …, …}}`); the
//! plugin refuses with a reason code or allows, fixing parameters the host applies: `max_admins` for a role
//! grant, `mode` for an invite (`direct` or `approval`) and a join (`join`, `request`).
//!
//! The rules: the owner manages roles and hands the group over; admins remove, mute and unmute plain members,
//! decide join requests, publish announcements and change the settings and profile; only the owner acts on
//! admins; any member may leave (remove themselves), list members and announcements and mark them read; plain
//! members invite only when the group allows it, and their invites follow the join policy.

use palaver_plugin_sdk::facts::{Group, JoinPolicy, Role};
use palaver_plugin_sdk::{Command, CommandHandler, CommandOutcome, Context, Facts, Family, Host, Reason, Value, json};
use serde::Deserialize;

/// The tenant's settings, as declared in `plugin.toml`.
#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub max_admins: u64,
    pub max_mute_ms: u64,
    pub max_announcement_chars: u64,
    pub max_name_chars: u64,
    pub max_intro_chars: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_admins: 5,
            max_mute_ms: 30 * 24 * 3600 * 1000,
            max_announcement_chars: 2000,
            max_name_chars: 64,
            max_intro_chars: 500,
        }
    }
}

/// The plugin; it keeps nothing between calls.
#[derive(Default)]
pub struct Governance;

fn allow() -> CommandOutcome {
    CommandOutcome::ok(Value::Null)
}

fn need(actor: Role, least: Role, what: &str) -> Option<CommandOutcome> {
    if actor >= least {
        return None;
    }
    let (reason, who) = match least {
        Role::Owner => (Reason::OwnerRequired, "the owner"),
        _ => (Reason::AdminRequired, "the owner and admins"),
    };
    Some(CommandOutcome::reject(reason, format!("only {who} can {what}")))
}

/// Acting on another member needs a role above theirs: admins act on members, the owner on admins too.
fn over(actor: Role, target: Role, what: &str) -> Option<CommandOutcome> {
    need(actor, Role::Admin, what).or_else(|| (target >= Role::Admin).then(|| need(actor, Role::Owner, what)).flatten())
}

fn too_long(n: u64, max: u64, reason: Reason, what: &str) -> Option<CommandOutcome> {
    (n > max).then(|| CommandOutcome::reject(reason, format!("{what} is at most {max} characters")))
}

impl CommandHandler for Governance {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        let s: Settings = cx.settings().unwrap_or_default();
        // Facts that do not read are refused: a role renamed on the host must never read as some default role.
        let facts = match cmd.facts_in(Family::Groups) {
            Ok(f) => f,
            Err(e) if cmd.id().is_none() => {
                return CommandOutcome::reject(Reason::UnknownCommand, format!("no command {}: {e}", cmd.name));
            }
            Err(e) => return CommandOutcome::bad_facts(&e),
        };
        let refusal = match facts {
            Facts::GroupMemberList(_)
            | Facts::GroupAnnouncementList(_)
            | Facts::GroupAnnouncementRead(_)
            | Facts::GroupSettingsGet(_)
            | Facts::GroupJoinCancel(_) => None,
            Facts::GroupMemberRemove(f) if f.leaving => None,
            Facts::GroupMemberRemove(f) => over(f.group.actor_role, f.user_role, "remove this member"),
            Facts::GroupRoleSet(f) => {
                return need(f.group.actor_role, Role::Owner, "change roles")
                    .unwrap_or_else(|| CommandOutcome::ok(json!({ "max_admins": s.max_admins })));
            }
            Facts::GroupOwnerTransfer(f) => need(f.group.actor_role, Role::Owner, "hand the group over"),
            Facts::GroupMuteSet(f) => over(f.group.actor_role, f.user_role, "mute this member").or_else(|| {
                let max = s.max_mute_ms;
                (f.duration_ms.unwrap_or(0).max(0) as u64 > max)
                    .then(|| CommandOutcome::reject(Reason::MuteTooLong, format!("a mute lasts at most {max} ms")))
            }),
            Facts::GroupMuteClear(f) => over(f.group.actor_role, f.user_role, "lift this mute"),
            Facts::GroupMuteAll(f) => need(f.group.actor_role, Role::Admin, "mute everyone"),
            Facts::GroupInvite(f) => return invite(&f.group),
            Facts::GroupJoinRequest(f) => return join(&f.group),
            Facts::GroupJoinList(f) => need(f.group.actor_role, Role::Admin, "see and decide join requests"),
            Facts::GroupJoinApprove(f) | Facts::GroupJoinReject(f) => {
                need(f.group.actor_role, Role::Admin, "see and decide join requests")
            }
            Facts::GroupSettingsSet(f) => need(f.group.actor_role, Role::Admin, "change the group's settings"),
            Facts::GroupProfileUpdate(f) => need(f.group.actor_role, Role::Admin, "change the group's profile")
                .or_else(|| too_long(f.name_chars, s.max_name_chars, Reason::NameTooLong, "a group name"))
                .or_else(|| too_long(f.intro_chars, s.max_intro_chars, Reason::IntroTooLong, "an intro")),
            Facts::GroupAnnouncementCreate(f) => announcement(&s, &f.group, f.content_chars),
            Facts::GroupAnnouncementUpdate(f) => announcement(&s, &f.group, f.content_chars),
            Facts::GroupAnnouncementDelete(f) => announcement(&s, &f.group, 0),
            other => {
                let name = other.command();
                Some(CommandOutcome::reject(
                    Reason::UnknownCommand,
                    format!("the governance plugin does not run {name}"),
                ))
            }
        };
        refusal.unwrap_or_else(allow)
    }
}

fn announcement(s: &Settings, g: &Group, chars: u64) -> Option<CommandOutcome> {
    need(g.actor_role, Role::Admin, "manage announcements")
        .or_else(|| too_long(chars, s.max_announcement_chars, Reason::AnnouncementTooLarge, "an announcement"))
}

/// Admins add at once; plain members invite only if the group lets them, and then the join policy decides.
fn invite(g: &Group) -> CommandOutcome {
    if g.actor_role >= Role::Admin {
        return CommandOutcome::ok(json!({ "mode": "direct" }));
    }
    if !g.settings.members_invite {
        return CommandOutcome::reject(Reason::InviteNotAllowed, "only the owner and admins can invite here");
    }
    match g.settings.join_policy {
        JoinPolicy::Open => CommandOutcome::ok(json!({ "mode": "direct" })),
        _ => CommandOutcome::ok(json!({ "mode": "approval" })),
    }
}

fn join(g: &Group) -> CommandOutcome {
    match g.settings.join_policy {
        JoinPolicy::Open => CommandOutcome::ok(json!({ "mode": "join" })),
        JoinPolicy::Closed => CommandOutcome::reject(Reason::GroupClosed, "this group takes no join requests"),
        JoinPolicy::Approval => CommandOutcome::ok(json!({ "mode": "request" })),
    }
}

palaver_plugin_sdk::command_handler!(Governance);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::testing::{Harness, run_command_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");

    /// Complete facts of `name`, from a flat spec of the values a test cares about (`actor_role`, `user_role`,
    /// `self`, `duration_ms`, `join_policy`, `members_invite`, `content_chars`); the rest are neutral.
    fn facts(name: &str, spec: &Value) -> Value {
        let get = |k: &str, d: Value| spec.get(k).cloned().unwrap_or(d);
        let settings = json!({ "join_policy": get("join_policy", json!("approval")),
            "members_invite": get("members_invite", json!(false)) });
        let group = json!({ "topic": "grpT", "actor_role": get("actor_role", json!("member")), "owner": null,
            "admins": 0, "settings": settings });
        let (user, user_role) = (json!("usrB"), get("user_role", json!("member")));
        let mut f = match name {
            "group.member.remove" => json!({ "user": user, "user_role": user_role, "self": get("self", json!(false)) }),
            "group.role.set" => json!({ "user": user, "user_role": user_role, "role": "admin" }),
            "group.owner.transfer" | "group.mute.clear" => json!({ "user": user, "user_role": user_role }),
            "group.mute.set" => {
                json!({ "user": user, "user_role": user_role, "duration_ms": get("duration_ms", Value::Null) })
            }
            "group.mute.all" => json!({ "muted": true }),
            "group.invite" => json!({ "users": ["usrC"] }),
            "group.join.approve" | "group.join.reject" | "group.join.cancel" => json!({ "request_id": 1 }),
            "group.settings.set" => json!({ "new": { "join_policy": "open", "members_invite": false } }),
            "group.announcement.create" => {
                json!({ "content_chars": get("content_chars", json!(0)), "content_bytes": 0, "pinned": false })
            }
            "group.announcement.update" => json!({ "announcement_id": 1,
                "content_chars": get("content_chars", json!(0)), "content_bytes": 0, "pinned": false }),
            "group.announcement.read" | "group.announcement.delete" => json!({ "announcement_id": 1 }),
            "group.profile.update" => json!({ "name_chars": 0, "intro_chars": 0 }),
            _ => json!({}),
        };
        f["group"] = group;
        f
    }

    fn run(name: &str, spec: Value) -> CommandOutcome {
        let input = json!({ "args": {}, "facts": facts(name, &spec) });
        Harness::<Governance>::with_manifest(MANIFEST).unwrap().command(name, input)
    }

    #[test]
    fn every_group_command_reads_its_facts_and_missing_ones_refuse() {
        for c in palaver_plugin_sdk::CommandName::ALL.iter().filter(|c| c.name().starts_with("group.")) {
            let ok = run(c.name(), json!({ "actor_role": "owner" }));
            assert_ne!(ok.reason_code(), Some("FACTS_INVALID"), "{c}: {ok:?}");
            let mut h = Harness::<Governance>::with_manifest(MANIFEST).unwrap();
            let mut partial = facts(c.name(), &json!({ "actor_role": "owner" }));
            partial["group"].as_object_mut().unwrap().remove("actor_role");
            let o = h.command(c.name(), json!({ "facts": partial }));
            assert_eq!(o.reason_code(), Some("FACTS_INVALID"), "{c} without the actor's role must not default");
        }
    }

    #[test]
    fn the_manifest_fixtures_pass() {
        assert!(run_command_fixtures::<Governance>(MANIFEST).unwrap() >= 8);
    }

    #[test]
    fn admins_act_on_members_and_only_the_owner_on_admins() {
        let kick = |a: &str, t: &str| {
            run("group.member.remove", json!({ "actor_role": a, "user_role": t })).reason_code().map(str::to_owned)
        };
        assert_eq!(kick("admin", "member"), None);
        assert_eq!(kick("admin", "admin").as_deref(), Some("OWNER_REQUIRED"));
        assert_eq!(kick("owner", "admin"), None);
        assert_eq!(kick("member", "member").as_deref(), Some("ADMIN_REQUIRED"));
        assert_eq!(run("group.member.remove", json!({ "actor_role": "member", "self": true })).reason_code(), None);
    }

    #[test]
    fn a_role_grant_carries_the_admin_limit_setting() {
        let mut h = Harness::<Governance>::with_manifest(MANIFEST).unwrap();
        h.settings(json!({ "max_admins": 2 }));
        let o =
            h.command("group.role.set", json!({ "facts": facts("group.role.set", &json!({ "actor_role": "owner" })) }));
        assert_eq!(o, CommandOutcome::ok(json!({ "max_admins": 2 })));
    }

    #[test]
    fn invites_follow_the_role_and_the_policy() {
        let mode = |f: Value| match run("group.invite", f) {
            CommandOutcome::Ok(v) => v["mode"].as_str().unwrap_or_default().to_owned(),
            CommandOutcome::Rejected { reason_code, .. } => reason_code,
        };
        assert_eq!(mode(json!({ "actor_role": "admin" })), "direct");
        assert_eq!(mode(json!({ "actor_role": "member" })), "INVITE_NOT_ALLOWED");
        assert_eq!(
            mode(json!({ "actor_role": "member", "members_invite": true, "join_policy": "approval" })),
            "approval"
        );
        assert_eq!(mode(json!({ "actor_role": "member", "members_invite": true, "join_policy": "open" })), "direct");
    }

    #[test]
    fn long_mutes_and_announcements_are_refused() {
        let long = 31u64 * 24 * 3600 * 1000;
        let m = run("group.mute.set", json!({ "actor_role": "owner", "user_role": "member", "duration_ms": long }));
        assert_eq!(m.reason_code(), Some("MUTE_TOO_LONG"));
        let a = run("group.announcement.create", json!({ "actor_role": "admin", "content_chars": 2001 }));
        assert_eq!(a.reason_code(), Some("ANNOUNCEMENT_TOO_LARGE"));
    }
}
