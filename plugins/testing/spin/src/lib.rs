//! A test plugin that never returns: the epoch deadline (or, with a small budget, the fuel) must stop it.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// Spins.
#[derive(Default)]
pub struct Spin;

impl PublishFilter for Spin {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        let mut n: u64 = msg.text().map_or(0, |t| t.len() as u64);
        // `black_box` keeps the optimiser from proving the loop useless.
        loop {
            n = std::hint::black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
}

palaver_plugin_sdk::publish_filter!(Spin);
