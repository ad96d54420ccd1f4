//! A test plugin whose code emits events while its manifest grants only `log`: the load gate must refuse it.

use palaver_plugin_sdk::{Context, Host, Level, Message, PublishFilter, Verdict, json};

/// Uses an import it was not granted.
#[derive(Default)]
pub struct Ungranted;

impl PublishFilter for Ungranted {
    fn before_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        cx.log(Level::Info, "emitting");
        let _ = cx.emit_to_topic(&msg.topic, "ungranted.seen", &json!({}));
        Verdict::Allow
    }
}

palaver_plugin_sdk::publish_filter!(Ungranted);
