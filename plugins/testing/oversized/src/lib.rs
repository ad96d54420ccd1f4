//! A test plugin that answers every message with a rewrite far larger than the host's output cap.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// Rewrites into a megabyte.
#[derive(Default)]
pub struct Oversized;

impl PublishFilter for Oversized {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, _msg: &Message) -> Verdict {
        Verdict::rewrite("x".repeat(1 << 20))
    }
}

palaver_plugin_sdk::publish_filter!(Oversized);
