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

use palaver_plugin_sdk::{Context, Host, Level, Message, PublishFilter, Value, Verdict};
use regex_lite::Regex;
use serde::Deserialize;
use std::collections::HashSet;
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

// The rules: settings as the manifest declares them, compiled once per settings text.

/// What to do with a message that carries a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkPolicy {
    #[default]
    Allow,
    Hold,
    Reject,
}

/// The settings as the manifest declares them; every field has the manifest's default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub words: Vec<String>,
    pub patterns: Vec<String>,
    pub hold_words: Vec<String>,
    pub hold_patterns: Vec<String>,
    pub mask_words: Vec<String>,
    pub max_length: u64,
    pub links: LinkPolicy,
    pub reject_code: u16,
    pub length_code: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            words: vec!["forbidden".to_owned()],
            patterns: Vec::new(),
            hold_words: Vec::new(),
            hold_patterns: Vec::new(),
            mask_words: Vec::new(),
            max_length: 0,
            links: LinkPolicy::Allow,
            reject_code: 422,
            length_code: 413,
        }
    }
}

/// Single words match whole words; entries with spaces match as phrases anywhere in the normalised text.
#[derive(Debug, Default)]
struct WordSet {
    words: HashSet<String>,
    phrases: Vec<String>,
}

impl WordSet {
    fn new(list: &[String]) -> WordSet {
        let mut set = WordSet::default();
        for w in list.iter().map(|w| normalise(w)).filter(|w| !w.is_empty()) {
            if w.contains(' ') {
                set.phrases.push(w);
            } else {
                set.words.insert(w);
            }
        }
        set
    }

    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.phrases.is_empty()
    }

    fn hit(&self, tokens: &[String], normalised: &str) -> bool {
        tokens.iter().any(|t| self.words.contains(t)) || self.phrases.iter().any(|p| normalised.contains(p.as_str()))
    }
}

/// Lower-case words separated by single spaces.
fn normalise(s: &str) -> String {
    tokens(s).join(" ")
}

fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_lowercase).collect()
}

/// Compiled rules.
#[derive(Debug)]
pub struct Rules {
    words: WordSet,
    patterns: Vec<Regex>,
    hold_words: WordSet,
    hold_patterns: Vec<Regex>,
    mask: HashSet<String>,
    max_length: u64,
    links: LinkPolicy,
    reject_code: u16,
    length_code: u16,
    /// Patterns that did not compile, for the log; they are left out rather than failing every message.
    pub bad_patterns: Vec<String>,
}

fn compile(list: &[String], bad: &mut Vec<String>) -> Vec<Regex> {
    let mut out = Vec::new();
    for p in list {
        // Case-insensitive unless the pattern says otherwise, like the word lists.
        match Regex::new(&format!("(?i){p}")) {
            Ok(r) => out.push(r),
            Err(e) => bad.push(format!("{p:?}: {e}")),
        }
    }
    out
}

fn has_link(text: &str, msg: &Message) -> bool {
    let lower = text.to_lowercase();
    lower.contains("http://") || lower.contains("https://") || lower.contains("www.") || !msg.link_entities().is_empty()
}

impl Rules {
    pub fn new(s: &Settings) -> Rules {
        let mut bad = Vec::new();
        Rules {
            words: WordSet::new(&s.words),
            patterns: compile(&s.patterns, &mut bad),
            hold_words: WordSet::new(&s.hold_words),
            hold_patterns: compile(&s.hold_patterns, &mut bad),
            mask: s.mask_words.iter().map(|w| w.to_lowercase()).filter(|w| !w.is_empty()).collect(),
            max_length: s.max_length,
            links: s.links,
            reject_code: s.reject_code,
            length_code: s.length_code,
            bad_patterns: bad,
        }
    }

    /// The verdict: length, blocked words and patterns and links reject first; then held words, patterns and
    /// links hold; then masked words rewrite; anything else is allowed.
    pub fn judge(&self, msg: &Message) -> Verdict {
        let Some(text) = msg.text() else { return Verdict::Allow };
        let length = text.chars().count() as u64;
        if self.max_length > 0 && length > self.max_length {
            return Verdict::reject(self.length_code, format!("message is longer than {} characters", self.max_length));
        }
        let toks = tokens(text);
        let normalised = toks.join(" ");
        if !self.words.is_empty() && self.words.hit(&toks, &normalised) {
            return Verdict::reject(self.reject_code, "message contains a blocked word");
        }
        if self.patterns.iter().any(|r| r.is_match(text)) {
            return Verdict::reject(self.reject_code, "message matches a blocked pattern");
        }
        let link = self.links != LinkPolicy::Allow && has_link(text, msg);
        if link && self.links == LinkPolicy::Reject {
            return Verdict::reject(self.reject_code, "links are not allowed");
        }
        let mut flags = Vec::new();
        if !self.hold_words.is_empty() && self.hold_words.hit(&toks, &normalised) {
            flags.push("word");
        }
        if self.hold_patterns.iter().any(|r| r.is_match(text)) {
            flags.push("pattern");
        }
        if link {
            flags.push("link");
        }
        if !flags.is_empty() {
            return Verdict::hold(flags);
        }
        if !self.mask.is_empty()
            && let Some(masked) = self.masked(text)
        {
            let content = match &msg.content {
                Value::Object(o) => {
                    let mut o = o.clone();
                    o.insert("txt".to_owned(), Value::String(masked));
                    Value::Object(o)
                }
                _ => Value::String(masked),
            };
            return Verdict::Rewrite { content, head: msg.head.clone() };
        }
        Verdict::Allow
    }

    /// The text with every masked word replaced by as many asterisks as it has characters (which keeps Drafty
    /// offsets valid), or `None` if nothing was masked.
    fn masked(&self, text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let mut hit = false;
        let mut flush = |word: &mut String, out: &mut String| {
            if self.mask.contains(&word.to_lowercase()) {
                out.extend(std::iter::repeat_n('*', word.chars().count()));
                hit = true;
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in text.chars() {
            if c.is_alphanumeric() {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        hit.then_some(out)
    }
}

/// The rules run natively through the SDK's test harness, and the golden fixtures of `plugin.toml`.
#[cfg(test)]
mod tests {
    use super::Moderation;
    use palaver_plugin_sdk::testing::{Harness, run_publish_fixtures};
    use palaver_plugin_sdk::{Level, Message, Verdict, json};

    const MANIFEST: &str = include_str!("../plugin.toml");

    fn harness() -> Harness<Moderation> {
        Harness::with_manifest(MANIFEST).unwrap()
    }

    #[test]
    fn the_golden_fixtures_pass_natively() {
        assert_eq!(run_publish_fixtures::<Moderation>(MANIFEST).unwrap(), 10);
    }

    #[test]
    fn defaults_reject_only_the_word_forbidden() {
        let mut h = harness();
        assert_eq!(h.publish("hi there"), Verdict::Allow);
        assert!(matches!(h.publish("that is Forbidden."), Verdict::Reject { code: 422, .. }));
        assert_eq!(h.publish(json!({ "txt": "nothing to see" })), Verdict::Allow);
        assert_eq!(h.publish(json!(42)), Verdict::Allow, "content without text is not judged");
    }

    #[test]
    fn phrases_match_across_punctuation_and_case() {
        let mut h = harness();
        h.settings(json!({ "words": ["buy now"] }));
        assert!(matches!(h.publish("BUY, now!"), Verdict::Reject { .. }));
        assert_eq!(h.publish("buy it now"), Verdict::Allow);
        assert_eq!(h.publish("forbidden"), Verdict::Allow, "a tenant's own list replaces the default");
    }

    #[test]
    fn rejects_come_before_holds_and_holds_before_masks() {
        let mut h = harness();
        h.settings(json!({ "hold_words": ["maybe"], "mask_words": ["darn"], "links": "reject" }));
        assert!(matches!(h.publish("maybe forbidden"), Verdict::Reject { .. }));
        assert!(
            matches!(h.publish("maybe www.example.com"), Verdict::Reject { reason, .. } if reason.contains("links"))
        );
        assert_eq!(h.publish("darn, maybe"), Verdict::hold(["word"]));
        assert_eq!(h.publish("Darn it"), Verdict::rewrite("**** it"));
    }

    #[test]
    fn drafty_links_count_and_masks_keep_the_document() {
        let mut h = harness();
        h.settings(json!({ "links": "hold", "mask_words": ["heck"] }));
        let with_link = json!({ "txt": "see this", "ent": [{ "tp": "LN", "data": { "url": "https://x.io" } }] });
        assert_eq!(h.publish(with_link), Verdict::hold(["link"]));
        let doc = Message::new(json!({ "txt": "heck yes", "fmt": [{ "at": 5, "len": 3, "tp": "ST" }] }));
        let Verdict::Rewrite { content, .. } = h.publish_message(&doc) else { panic!("not rewritten") };
        assert_eq!(content, json!({ "txt": "**** yes", "fmt": [{ "at": 5, "len": 3, "tp": "ST" }] }));
    }

    #[test]
    fn a_bad_pattern_is_logged_and_skipped() {
        let mut h = harness();
        h.settings(json!({ "patterns": ["(unclosed", "spam+"] }));
        assert!(matches!(h.publish("spammm"), Verdict::Reject { .. }));
        assert!(h.host.logs.iter().any(|(l, m)| *l == Level::Warn && m.contains("(unclosed")));
        assert_eq!(h.publish("fine"), Verdict::Allow);
        assert_eq!(h.host.logs.len(), 1, "rules are compiled once per settings, so the warning is logged once");
    }

    #[test]
    fn rules_are_recompiled_when_the_settings_change() {
        let mut h = harness();
        assert!(matches!(h.publish("forbidden"), Verdict::Reject { .. }));
        h.settings(json!({ "words": ["other"] }));
        assert_eq!(h.publish("forbidden"), Verdict::Allow);
        assert!(matches!(h.publish("other"), Verdict::Reject { .. }));
    }
}
