//! A test plugin that writes a key, an event and a notification on every call and then panics when the message
//! (or command) says `boom`: the host must discard the effects of a call that trapped and keep those of one that
//! did not. Its manifest grants `log`, so the SDK reports the panic's message (`boom requested`) to the host.

use palaver_plugin_sdk::{
    Command, CommandHandler, CommandOutcome, Context, Host, Message, Notification, PublishFilter, Verdict, json,
};

/// Writes effects, then maybe traps.
#[derive(Default)]
pub struct Trap;

fn effects<H: Host>(cx: &mut Context<'_, H>, what: &str) {
    let actor = cx.call().actor.clone();
    // Errors are ignored on purpose: the test checks what the host applied, not what the guest saw.
    let _ = cx.kv().set("last", what.as_bytes(), None);
    let _ = cx.emit_to_user(&actor, "trap.seen", &json!({ "what": what }));
    let n = Notification { user: actor, kind: "trap.seen".to_owned(), title: what.to_owned(), payload: json!({}) };
    let _ = cx.notify(&n);
}

impl PublishFilter for Trap {
    fn before_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        let text = msg.text().unwrap_or_default().to_owned();
        effects(cx, &text);
        if text.contains("boom") {
            panic!("boom requested");
        }
        Verdict::Allow
    }
}

impl CommandHandler for Trap {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        effects(cx, &cmd.name);
        if cmd.name == "trap.boom" {
            panic!("boom requested");
        }
        CommandOutcome::ok(json!({ "done": cmd.name }))
    }
}

palaver_plugin_sdk::full_plugin!(Trap);
