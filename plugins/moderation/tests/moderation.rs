//! The moderation plugin's rules, run natively through the SDK's test harness, and its golden fixtures.

use moderation::Moderation;
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
    assert!(matches!(h.publish("maybe www.example.com"), Verdict::Reject { reason, .. } if reason.contains("links")));
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
