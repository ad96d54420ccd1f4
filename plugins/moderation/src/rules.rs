//! A tenant's moderation rules, compiled once from its settings: blocked and held words, regular expressions,
//! masked words, a maximum length and a link policy, and the judgement of one message against them.

use palaver_plugin_sdk::{Message, Value, Verdict};
use regex_lite::Regex;
use serde::Deserialize;
use std::collections::HashSet;

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
