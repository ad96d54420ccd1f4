//! Version 1 of the hot-reload fixture: rejects messages that contain `alpha`, with reason `v1: alpha`.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// The rule of version 1.
#[derive(Default)]
pub struct Ruled;

impl PublishFilter for Ruled {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        if msg.text().is_some_and(|t| t.contains("alpha")) {
            return Verdict::reject(422, "v1: alpha");
        }
        Verdict::Allow
    }
}

palaver_plugin_sdk::publish_filter!(Ruled);
