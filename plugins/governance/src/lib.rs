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

use palaver_plugin_sdk::{Command, CommandHandler, CommandOutcome, Context, Host, Value, json};
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

/// A member's role as the host reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Member,
    Admin,
    Owner,
}

fn role(facts: &Value, key: &str) -> Role {
    match facts.get(key).and_then(Value::as_str) {
        Some("owner") => Role::Owner,
        Some("admin") => Role::Admin,
        _ => Role::Member,
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
        Role::Owner => ("OWNER_REQUIRED", "the owner"),
        _ => ("ADMIN_REQUIRED", "the owner and admins"),
    };
    Some(CommandOutcome::reject(403, reason, format!("only {who} can {what}")))
}

/// Acting on another member needs a role above theirs: admins act on members, the owner on admins too.
fn over(actor: Role, target: Role, what: &str) -> Option<CommandOutcome> {
    need(actor, Role::Admin, what).or_else(|| (target >= Role::Admin).then(|| need(actor, Role::Owner, what)).flatten())
}

fn too_long(n: u64, max: u64, status: u16, reason: &str, what: &str) -> Option<CommandOutcome> {
    (n > max).then(|| CommandOutcome::reject(status, reason, format!("{what} is at most {max} characters")))
}

impl CommandHandler for Governance {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        let s: Settings = cx.settings().unwrap_or_default();
        let facts = cmd.args.get("facts").cloned().unwrap_or(Value::Null);
        let actor = role(&facts, "actor_role");
        let target = role(&facts, "user_role");
        let num = |k: &str| facts.get(k).and_then(Value::as_u64).unwrap_or(0);
        let flag = |k: &str| facts.get(k).and_then(Value::as_bool).unwrap_or(false);
        let refusal = match cmd.name.as_str() {
            "group.member.list"
            | "group.announcement.list"
            | "group.announcement.read"
            | "group.settings.get"
            | "group.join.cancel" => None,
            "group.member.remove" if flag("self") => None,
            "group.member.remove" => over(actor, target, "remove this member"),
            "group.role.set" => {
                return need(actor, Role::Owner, "change roles")
                    .unwrap_or_else(|| CommandOutcome::ok(json!({ "max_admins": s.max_admins })));
            }
            "group.owner.transfer" => need(actor, Role::Owner, "hand the group over"),
            "group.mute.set" => over(actor, target, "mute this member").or_else(|| {
                let max = s.max_mute_ms;
                (num("duration_ms") > max)
                    .then(|| CommandOutcome::reject(400, "MUTE_TOO_LONG", format!("a mute lasts at most {max} ms")))
            }),
            "group.mute.clear" => over(actor, target, "lift this mute"),
            "group.mute.all" => need(actor, Role::Admin, "mute everyone"),
            "group.invite" => return invite(actor, &facts),
            "group.join.request" => return join(&facts),
            "group.join.list" | "group.join.approve" | "group.join.reject" => {
                need(actor, Role::Admin, "see and decide join requests")
            }
            "group.settings.set" => need(actor, Role::Admin, "change the group's settings"),
            "group.profile.update" => need(actor, Role::Admin, "change the group's profile")
                .or_else(|| too_long(num("name_chars"), s.max_name_chars, 400, "NAME_TOO_LONG", "a group name"))
                .or_else(|| too_long(num("intro_chars"), s.max_intro_chars, 400, "INTRO_TOO_LONG", "an intro")),
            "group.announcement.create" | "group.announcement.update" | "group.announcement.delete" => {
                need(actor, Role::Admin, "manage announcements").or_else(|| {
                    too_long(
                        num("content_chars"),
                        s.max_announcement_chars,
                        413,
                        "ANNOUNCEMENT_TOO_LARGE",
                        "an announcement",
                    )
                })
            }
            other => Some(CommandOutcome::reject(404, "UNKNOWN_COMMAND", format!("no command {other}"))),
        };
        refusal.unwrap_or_else(allow)
    }
}

/// Admins add at once; plain members invite only if the group lets them, and then the join policy decides.
fn invite(actor: Role, facts: &Value) -> CommandOutcome {
    if actor >= Role::Admin {
        return CommandOutcome::ok(json!({ "mode": "direct" }));
    }
    if !facts.get("members_invite").and_then(Value::as_bool).unwrap_or(false) {
        return CommandOutcome::reject(403, "INVITE_NOT_ALLOWED", "only the owner and admins can invite here");
    }
    match facts.get("join_policy").and_then(Value::as_str) {
        Some("open") => CommandOutcome::ok(json!({ "mode": "direct" })),
        _ => CommandOutcome::ok(json!({ "mode": "approval" })),
    }
}

fn join(facts: &Value) -> CommandOutcome {
    match facts.get("join_policy").and_then(Value::as_str) {
        Some("open") => CommandOutcome::ok(json!({ "mode": "join" })),
        Some("closed") => CommandOutcome::reject(403, "GROUP_CLOSED", "this group takes no join requests"),
        _ => CommandOutcome::ok(json!({ "mode": "request" })),
    }
}

palaver_plugin_sdk::command_handler!(Governance);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::testing::{Harness, run_command_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");

    fn run(name: &str, facts: Value) -> CommandOutcome {
        Harness::<Governance>::with_manifest(MANIFEST).unwrap().command(name, json!({ "args": {}, "facts": facts }))
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
        let o = h.command("group.role.set", json!({ "facts": { "actor_role": "owner" } }));
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
