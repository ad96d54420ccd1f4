//! A test plugin that allows every message: the baseline for call-cost measurements and the swap tests.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// Allows everything.
#[derive(Default)]
pub struct AllowAll;

impl PublishFilter for AllowAll {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, _msg: &Message) -> Verdict {
        Verdict::Allow
    }
}

palaver_plugin_sdk::publish_filter!(AllowAll);
