//! Palaver's friends plugin: the rules of friend requests, remarks and blocks, per tenant.
//!
//! The host stores relations and keeps them race-free; before each `friend.*` or `block.*` command it sends
//! this plugin the command's arguments and the facts it gathered (`{"args": …, "facts": …}`), and the plugin
//! allows or refuses. The rules: no request to or from someone who blocked you (`BLOCKED`), none to a friend
//! (`ALREADY_FRIENDS`), a repeated request goes through (the host answers the pending one, which makes it
//! idempotent), at most `daily_limit` requests in 24 hours (`FRIEND_REQUEST_LIMIT`), and bounded message and
//! remark lengths. Before P2P messages the host asks `friend.p2p.send` (cached per topic), which refuses
//! non-friends with `FRIENDSHIP_REQUIRED` when the tenant sets `p2p_requires_friendship`. Every other command is
//! allowed: it only reads or changes the caller's own relations.

use palaver_plugin_sdk::facts::FriendRequestFacts;
use palaver_plugin_sdk::{Command, CommandHandler, CommandOutcome, Context, Facts, Family, Host, Reason, Value, json};
use serde::Deserialize;

/// The tenant's settings, as declared in `plugin.toml`.
#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub daily_limit: u64,
    pub max_message_chars: u64,
    pub max_remark_chars: u64,
    pub p2p_requires_friendship: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { daily_limit: 30, max_message_chars: 200, max_remark_chars: 64, p2p_requires_friendship: false }
    }
}

/// The plugin; it keeps nothing between calls.
#[derive(Default)]
pub struct Friends;

impl CommandHandler for Friends {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        let settings: Settings = cx.settings().unwrap_or_default();
        // Facts that do not read are refused: a fact renamed on the host must never read as "not blocked".
        let facts = match cmd.facts_in(Family::Friends) {
            Ok(f) => f,
            Err(e) if cmd.id().is_none() => {
                return CommandOutcome::reject(Reason::UnknownCommand, format!("no command {}: {e}", cmd.name));
            }
            Err(e) => return CommandOutcome::bad_facts(&e),
        };
        match facts {
            Facts::FriendRequestCreate(f) => request(&settings, &f),
            Facts::FriendRemark(f) => {
                if f.remark_chars > settings.max_remark_chars {
                    let max = settings.max_remark_chars;
                    return CommandOutcome::reject(
                        Reason::RemarkTooLong,
                        format!("a remark is at most {max} characters"),
                    );
                }
                CommandOutcome::ok(Value::Null)
            }
            Facts::FriendP2pSend(f) => {
                if settings.p2p_requires_friendship && !f.friends {
                    return CommandOutcome::reject(
                        Reason::FriendshipRequired,
                        "only friends can message each other here",
                    );
                }
                CommandOutcome::ok(Value::Null)
            }
            Facts::FriendRequestList(_)
            | Facts::FriendRequestAccept(_)
            | Facts::FriendRequestReject(_)
            | Facts::FriendRequestCancel(_)
            | Facts::FriendList(_)
            | Facts::FriendDelete(_)
            | Facts::BlockCreate(_)
            | Facts::BlockList(_)
            | Facts::BlockDelete(_) => CommandOutcome::ok(Value::Null),
            other => {
                let name = other.command();
                CommandOutcome::reject(Reason::UnknownCommand, format!("the friends plugin does not run {name}"))
            }
        }
    }
}

fn request(settings: &Settings, f: &FriendRequestFacts) -> CommandOutcome {
    if f.blocked_me || f.i_blocked {
        // The same words either way, so that nobody learns whether they were blocked.
        return CommandOutcome::reject(Reason::Blocked, "you cannot send this user a friend request");
    }
    if f.friends {
        return CommandOutcome::reject(Reason::AlreadyFriends, "you are friends already");
    }
    // A repeat of a pending request is answered by the host with that request; it does not count again.
    if f.pending_out.is_some() {
        return CommandOutcome::ok(json!({ "repeat": true }));
    }
    if f.sent_today >= settings.daily_limit {
        let limit = settings.daily_limit;
        return CommandOutcome::reject(
            Reason::FriendRequestLimit,
            format!("at most {limit} friend requests a day; try again tomorrow"),
        );
    }
    if f.message_chars > settings.max_message_chars {
        let max = settings.max_message_chars;
        return CommandOutcome::reject(
            Reason::MessageTooLong,
            format!("a request message is at most {max} characters"),
        );
    }
    CommandOutcome::ok(Value::Null)
}

palaver_plugin_sdk::command_handler!(Friends);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::testing::{Harness, run_command_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");

    /// A request's facts: nothing in the way, with `changes` applied.
    fn create(h: &mut Harness<Friends>, changes: Value) -> CommandOutcome {
        let mut facts = json!({ "to": "usrB", "friends": false, "i_blocked": false, "blocked_me": false,
            "pending_out": null, "pending_in": null, "sent_today": 0, "message_chars": 0 });
        for (k, v) in changes.as_object().unwrap() {
            facts[k] = v.clone();
        }
        h.command("friend.request.create", json!({ "args": {}, "facts": facts }))
    }

    #[test]
    fn the_manifest_fixtures_pass() {
        assert!(run_command_fixtures::<Friends>(MANIFEST).unwrap() >= 5);
    }

    #[test]
    fn the_daily_limit_is_a_setting() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        assert_eq!(create(&mut h, json!({ "sent_today": 29 })).reason_code(), None);
        assert_eq!(create(&mut h, json!({ "sent_today": 30 })).reason_code(), Some("FRIEND_REQUEST_LIMIT"));
        h.settings(json!({ "daily_limit": 100 }));
        assert_eq!(create(&mut h, json!({ "sent_today": 30 })).reason_code(), None);
    }

    #[test]
    fn a_block_either_way_refuses_with_the_same_words() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        let a = create(&mut h, json!({ "blocked_me": true }));
        let b = create(&mut h, json!({ "i_blocked": true }));
        assert_eq!(a, b);
        assert_eq!(a.reason_code(), Some("BLOCKED"));
    }

    #[test]
    fn a_repeat_is_allowed_even_over_the_limit() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        assert_eq!(create(&mut h, json!({ "pending_out": 7, "sent_today": 1000 })).reason_code(), None);
    }

    #[test]
    fn a_tenant_can_require_friendship_for_p2p() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        let send = |h: &mut Harness<Friends>, friends: bool| {
            h.command("friend.p2p.send", json!({ "facts": { "friends": friends } })).reason_code().map(str::to_owned)
        };
        assert_eq!(send(&mut h, false), None, "off by default");
        h.settings(json!({ "p2p_requires_friendship": true }));
        assert_eq!(send(&mut h, false).as_deref(), Some("FRIENDSHIP_REQUIRED"));
        assert_eq!(send(&mut h, true), None);
    }

    #[test]
    fn unknown_commands_are_refused() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        assert_eq!(h.command("friend.nope", json!({})).reason_code(), Some("UNKNOWN_COMMAND"));
        let group = h.command("group.settings.get", json!({ "facts": { "group": null } }));
        assert_eq!(group.reason_code(), Some("FACTS_INVALID"), "facts that do not read are refused first");
    }

    #[test]
    fn missing_renamed_or_mistyped_facts_refuse_never_allow() {
        let mut h = Harness::<Friends>::with_manifest(MANIFEST).unwrap();
        // A block fact renamed on one side would have read as "not blocked" and let the request through.
        let renamed = json!({ "to": "usrB", "friends": false, "i_blocked": false, "blocked_by_them": true,
            "pending_out": null, "pending_in": null, "sent_today": 0, "message_chars": 0 });
        let o = h.command("friend.request.create", json!({ "facts": renamed }));
        assert_eq!(o.reason_code(), Some("FACTS_INVALID"));
        assert!(matches!(o, CommandOutcome::Rejected { code: 500, .. }), "fails the command closed");
        let missing = h.command("friend.request.create", json!({ "facts": { "to": "usrB" } }));
        assert_eq!(missing.reason_code(), Some("FACTS_INVALID"));
        let mistyped = h.command("friend.p2p.send", json!({ "facts": { "friends": "yes" } }));
        assert_eq!(mistyped.reason_code(), Some("FACTS_INVALID"));
        assert_eq!(h.command("friend.list", json!({})).reason_code(), Some("FACTS_INVALID"), "no facts at all");
    }
}
