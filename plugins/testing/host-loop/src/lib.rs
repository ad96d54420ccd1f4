//! A test plugin that calls the host forever: the host-call cap must stop it long before its deadline.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// Asks the time, again and again.
#[derive(Default)]
pub struct HostLoop;

impl PublishFilter for HostLoop {
    fn before_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, _msg: &Message) -> Verdict {
        let mut t = 0;
        loop {
            t = std::hint::black_box(t ^ cx.now_ms());
        }
    }
}

palaver_plugin_sdk::publish_filter!(HostLoop);
