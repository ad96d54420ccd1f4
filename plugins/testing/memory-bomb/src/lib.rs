//! A test plugin that allocates and keeps memory until something stops it: the host's memory cap must.

use palaver_plugin_sdk::{Context, Host, Message, PublishFilter, Verdict};

/// Hoards memory.
#[derive(Default)]
pub struct MemoryBomb;

impl PublishFilter for MemoryBomb {
    fn before_publish<H: Host>(&mut self, _cx: &mut Context<'_, H>, _msg: &Message) -> Verdict {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            // Touch every page so the allocation is real, and keep it so nothing is freed.
            hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
        }
    }
}

palaver_plugin_sdk::publish_filter!(MemoryBomb);
