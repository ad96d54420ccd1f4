//! Version 2 of the hot-reload fixture: rejects messages that contain `beta`, with reason `v2: beta`.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// The rule of version 2.
#[derive(Default)]
pub struct Ruled;

impl PublishFilter for Ruled {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        if msg.text().is_some_and(|t| t.contains("beta")) {
            return Verdict::reject(422, "v2: beta");
        }
        Verdict::Allow
    }
}

palaver_plugin_sdk::publish_filter!(Ruled);
