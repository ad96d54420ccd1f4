//! An example Palaver plugin, the one `docs/plugins.md` walks through: it greets on a command and tags messages
//! that say hello.
//!
//! - `before-publish`: a message whose text starts with "hello" is rewritten with `head.mood = "friendly"`;
//!   everything else passes untouched.
//! - `on-command`: `hello.greet {"name": "Ann"}` answers `{"greeting": "Hello, Ann!", "count": n}`, where `n`
//!   counts the tenant's greetings in the plugin's key-value store, and sends the caller a realtime
//!   `hello.greeted` event; `hello.count` answers the count; `hello.whoami` looks the caller up in the directory.
//!   A greeting without a name is rejected with reason code `NAME_REQUIRED`.
//!
//! The greeting word is a per-tenant setting (`greeting`, default "Hello").

use palaver_plugin_sdk::{
    Command, CommandHandler, CommandOutcome, Context, Host, Level, Message, PublishFilter, Reason, Value, Verdict, json,
};
use serde::Deserialize;

/// The tenant's settings, as declared in `plugin.toml`.
#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub greeting: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { greeting: "Hello".to_owned() }
    }
}

/// The plugin. It keeps nothing between calls: the count lives in the key-value store.
#[derive(Default)]
pub struct Hello;

const COUNT: &str = "greetings";

impl PublishFilter for Hello {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        let says_hello = msg.text().is_some_and(|t| t.trim_start().to_lowercase().starts_with("hello"));
        if !says_hello {
            return Verdict::Allow;
        }
        let mut head = msg.head.clone().unwrap_or_default();
        head.insert("mood".to_owned(), Value::from("friendly"));
        Verdict::Rewrite { content: msg.content.clone(), head: Some(head) }
    }
}

impl CommandHandler for Hello {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        match cmd.name.as_str() {
            "hello.greet" => greet(cx, &cmd.args),
            "hello.count" => match cx.kv().get(COUNT) {
                Ok(v) => {
                    let n = v.and_then(|b| String::from_utf8(b).ok()).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
                    CommandOutcome::ok(json!({ "count": n }))
                }
                Err(e) => CommandOutcome::reject_other(503, "KV_UNAVAILABLE", e.to_string()),
            },
            "hello.whoami" => whoami(cx),
            other => CommandOutcome::reject(Reason::UnknownCommand, format!("no command {other}")),
        }
    }
}

fn greet<H: Host>(cx: &mut Context<'_, H>, args: &Value) -> CommandOutcome {
    let Some(name) = args.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty()) else {
        return CommandOutcome::reject_other(400, "NAME_REQUIRED", "say whom to greet: {\"name\": …}");
    };
    let settings: Settings = cx.settings().unwrap_or_default();
    let count = match cx.kv().incr(COUNT, 1, None) {
        Ok(n) => n,
        Err(e) => return CommandOutcome::reject_other(503, "KV_UNAVAILABLE", e.to_string()),
    };
    let greeting = format!("{}, {name}!", settings.greeting);
    let actor = cx.call().actor.clone();
    // The event goes out only if this call succeeds, together with the counter's new value.
    if let Err(e) = cx.emit_to_user(&actor, "hello.greeted", &json!({ "name": name, "count": count })) {
        cx.log(Level::Warn, &format!("greeting event not queued: {e}"));
    }
    CommandOutcome::ok(json!({ "greeting": greeting, "count": count }))
}

fn whoami<H: Host>(cx: &mut Context<'_, H>) -> CommandOutcome {
    let actor = cx.call().actor.clone();
    let greeting = cx.settings::<Settings>().unwrap_or_default().greeting;
    match cx.user(&actor) {
        Ok(Some(u)) => {
            CommandOutcome::ok(json!({ "id": u.id, "tags": u.tags, "active": u.active, "greeting": greeting }))
        }
        Ok(None) => CommandOutcome::reject(Reason::UserNotFound, format!("{greeting}, stranger: {actor} is unknown")),
        Err(e) => CommandOutcome::reject_other(503, "DIRECTORY_UNAVAILABLE", e.to_string()),
    }
}

palaver_plugin_sdk::full_plugin!(Hello);

/// The plugin run natively with the SDK's harness: what `docs/plugins.md` shows a newcomer.
#[cfg(test)]
mod tests {
    use super::Hello;
    use palaver_plugin_sdk::testing::{Harness, TestEvent, run_command_fixtures, run_publish_fixtures};
    use palaver_plugin_sdk::{CommandOutcome, Verdict, json};

    const MANIFEST: &str = include_str!("../plugin.toml");

    #[test]
    fn the_golden_fixtures_pass_natively() {
        assert_eq!(run_publish_fixtures::<Hello>(MANIFEST).unwrap(), 2);
        assert_eq!(run_command_fixtures::<Hello>(MANIFEST).unwrap(), 4);
    }

    #[test]
    fn greetings_count_and_notify_the_caller() {
        let mut h = Harness::<Hello>::with_manifest(MANIFEST).unwrap();
        assert_eq!(
            h.command("hello.greet", json!({ "name": "Ann" })),
            CommandOutcome::ok(json!({ "greeting": "Hello, Ann!", "count": 1 }))
        );
        assert_eq!(
            h.command("hello.greet", json!({ "name": "Bo" })),
            CommandOutcome::ok(json!({ "greeting": "Hello, Bo!", "count": 2 }))
        );
        assert_eq!(h.command("hello.count", json!(null)), CommandOutcome::ok(json!({ "count": 2 })));
        let to_caller = |e: &TestEvent| matches!(e, TestEvent::ToUser { user, name, .. } if *user == h.call.actor && name == "hello.greeted");
        assert_eq!(h.host.events.iter().filter(|e| to_caller(e)).count(), 2);
    }

    #[test]
    fn hello_messages_get_a_head_and_keep_their_content() {
        let mut h = Harness::<Hello>::new();
        let Verdict::Rewrite { content, head } = h.publish("Hello there") else { panic!("not rewritten") };
        assert_eq!(content, json!("Hello there"));
        assert_eq!(head.unwrap()["mood"], "friendly");
        assert_eq!(h.publish("hi"), Verdict::Allow);
    }
}
