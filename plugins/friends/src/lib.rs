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

use palaver_plugin_sdk::{Command, CommandHandler, CommandOutcome, Context, Host, Value, json};
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
        let facts = cmd.args.get("facts").cloned().unwrap_or(Value::Null);
        match cmd.name.as_str() {
            "friend.request.create" => request(&settings, &facts),
            "friend.remark" => {
                if number(&facts, "remark_chars") > settings.max_remark_chars {
                    let max = settings.max_remark_chars;
                    return CommandOutcome::reject(
                        400,
                        "REMARK_TOO_LONG",
                        format!("a remark is at most {max} characters"),
                    );
                }
                CommandOutcome::ok(Value::Null)
            }
            "friend.p2p.send" => {
                let friends = facts.get("friends").and_then(Value::as_bool).unwrap_or(false);
                if settings.p2p_requires_friendship && !friends {
                    return CommandOutcome::reject(
                        403,
                        "FRIENDSHIP_REQUIRED",
                        "only friends can message each other here",
                    );
                }
                CommandOutcome::ok(Value::Null)
            }
            "friend.request.list"
            | "friend.request.accept"
            | "friend.request.reject"
            | "friend.request.cancel"
            | "friend.list"
            | "friend.delete"
            | "block.create"
            | "block.list"
            | "block.delete" => CommandOutcome::ok(Value::Null),
            other => CommandOutcome::reject(404, "UNKNOWN_COMMAND", format!("no command {other}")),
        }
    }
}

fn request(settings: &Settings, facts: &Value) -> CommandOutcome {
    let flag = |k: &str| facts.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("blocked_me") || flag("i_blocked") {
        // The same words either way, so that nobody learns whether they were blocked.
        return CommandOutcome::reject(403, "BLOCKED", "you cannot send this user a friend request");
    }
    if flag("friends") {
        return CommandOutcome::reject(409, "ALREADY_FRIENDS", "you are friends already");
    }
    // A repeat of a pending request is answered by the host with that request; it does not count again.
    if facts.get("pending_out").is_some_and(|v| !v.is_null()) {
        return CommandOutcome::ok(json!({ "repeat": true }));
    }
    if number(facts, "sent_today") >= settings.daily_limit {
        let limit = settings.daily_limit;
        return CommandOutcome::reject(
            429,
            "FRIEND_REQUEST_LIMIT",
            format!("at most {limit} friend requests a day; try again tomorrow"),
        );
    }
    if number(facts, "message_chars") > settings.max_message_chars {
        let max = settings.max_message_chars;
        return CommandOutcome::reject(
            400,
            "MESSAGE_TOO_LONG",
            format!("a request message is at most {max} characters"),
        );
    }
    CommandOutcome::ok(Value::Null)
}

fn number(facts: &Value, key: &str) -> u64 {
    facts.get(key).and_then(Value::as_u64).unwrap_or(0)
}

palaver_plugin_sdk::command_handler!(Friends);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::testing::{Harness, run_command_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");

    fn create(h: &mut Harness<Friends>, facts: Value) -> CommandOutcome {
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
    }
}
