//! The content moderation plugin: judges every group and P2P message against its tenant's rules before the
//! message takes a seq.
//!
//! The rules come from the tenant's settings (see `plugin.toml` for the schema and the defaults, which reject any
//! message containing the word `forbidden`): blocked words and regular expressions and an over-long message are
//! rejected with a Tinode ctrl code and reason; held words and patterns, and links when the policy says `hold`,
//! hold the message for review with risk flags; masked words are rewritten as asterisks.
//!
//! Compiling regular expressions costs far more than matching them, so compiled rules are cached in the instance,
//! keyed by the settings text (which changes whenever a tenant's settings or the plugin's version do). The cache
//! is only a cache: a fresh instance rebuilds it on its first call.

mod rules;

pub use rules::{LinkPolicy, Rules, Settings};

use palaver_plugin_sdk::{Context, Host, Level, Message, PublishFilter, Verdict};
use std::rc::Rc;

/// How many tenants' rules an instance keeps compiled.
const CACHE: usize = 16;

/// The plugin: a small most-recently-used cache of compiled rules.
#[derive(Default)]
pub struct Moderation {
    cache: Vec<(String, Rc<Rules>)>,
}

impl Moderation {
    fn rules<H: Host>(&mut self, cx: &mut Context<'_, H>) -> Rc<Rules> {
        let key = cx.settings_text();
        if let Some(i) = self.cache.iter().position(|(k, _)| *k == key) {
            let hit = self.cache.remove(i);
            let rules = hit.1.clone();
            self.cache.insert(0, hit);
            return rules;
        }
        let settings: Settings = match cx.settings() {
            Ok(s) => s,
            Err(e) => {
                // Settings are validated by the host against the manifest, so this is a plugin bug: say so, and
                // fall back to the defaults rather than letting everything through.
                cx.log(Level::Error, &format!("moderation settings do not decode: {e}"));
                Settings::default()
            }
        };
        let rules = Rc::new(Rules::new(&settings));
        for bad in &rules.bad_patterns {
            cx.log(Level::Warn, &format!("moderation pattern ignored: {bad}"));
        }
        self.cache.insert(0, (key, rules.clone()));
        self.cache.truncate(CACHE);
        rules
    }
}

impl PublishFilter for Moderation {
    fn before_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Message) -> Verdict {
        self.rules(cx).judge(msg)
    }
}

palaver_plugin_sdk::publish_filter!(Moderation);
