//! `quiet-hours`, the example push filter (world `push-filter`): it keeps offline pushes from waking users at
//! night and from chatty groups they only want to hear from when mentioned.
//!
//! Per push (one user, one message), in this order:
//! 1. a silent push is kept (it shows nothing);
//! 2. in a group listed in `mention_only_groups`, a push to a user the message does not mention is dropped;
//! 3. inside the user's do-not-disturb hours (their own from `users`, else the tenant's) the push is delayed until
//!    the hours end (`during_quiet = "delay"`; the host caps the wait at `push.max_delay_ms`) or dropped;
//! 4. a push to a mentioned user gets `mention_body` as its alert text, when set.

use palaver_plugin_sdk::{Context, Host, Level, Push, PushDecision, PushFilter};
use serde::Deserialize;
use serde_json::{Map, Value};

const DAY_MINUTES: i64 = 24 * 60;

/// The tenant's settings, as the manifest declares them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    quiet_start: String,
    quiet_end: String,
    utc_offset_minutes: i64,
    users: Map<String, Value>,
    during_quiet: String,
    mention_only_groups: Vec<String>,
    mention_body: String,
}

/// Do-not-disturb hours as minutes of the local day, and the local offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    start: i64,
    end: i64,
    offset: i64,
}

/// `HH:MM` as minutes of the day.
fn minutes(s: &str) -> Option<i64> {
    let (h, m) = s.split_once(':')?;
    let (h, m) = (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?);
    ((0..24).contains(&h) && (0..60).contains(&m)).then_some(h * 60 + m)
}

impl Window {
    fn parse(start: &str, end: &str, offset: i64) -> Option<Window> {
        let (start, end) = (minutes(start)?, minutes(end)?);
        (start != end).then_some(Window { start, end, offset })
    }

    /// Milliseconds until the hours end if `now_ms` is inside them.
    fn remaining_ms(self, now_ms: u64) -> Option<u64> {
        let now_min = i64::try_from(now_ms / 60_000).unwrap_or(0) + self.offset;
        let m = now_min.rem_euclid(DAY_MINUTES);
        let inside =
            if self.start < self.end { (self.start..self.end).contains(&m) } else { m >= self.start || m < self.end };
        if !inside {
            return None;
        }
        let left_min = (self.end - m).rem_euclid(DAY_MINUTES);
        let into_minute = now_ms % 60_000;
        Some(u64::try_from(left_min).unwrap_or(0) * 60_000 - into_minute)
    }
}

impl Settings {
    /// The recipient's hours: their own entry in `users` (an empty object: none), else the tenant's.
    fn window_for(&self, user: &str) -> Option<Window> {
        if let Some(u) = self.users.get(user) {
            let s = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or_default();
            let offset = u.get("utc_offset_minutes").and_then(Value::as_i64).unwrap_or(self.utc_offset_minutes);
            return Window::parse(s("start"), s("end"), offset);
        }
        Window::parse(&self.quiet_start, &self.quiet_end, self.utc_offset_minutes)
    }
}

/// The filter. It keeps nothing between calls but what the settings say.
#[derive(Default)]
pub struct QuietHours;

impl PushFilter for QuietHours {
    fn before_push<H: Host>(&mut self, cx: &mut Context<'_, H>, push: &Push) -> PushDecision {
        if push.silent {
            return PushDecision::Keep;
        }
        let settings: Settings = match cx.settings() {
            Ok(s) => s,
            Err(e) => {
                // The host validated the settings against the manifest: this is a plugin bug, so keep the push.
                cx.log(Level::Error, &format!("quiet-hours settings do not decode: {e}"));
                return PushDecision::Keep;
            }
        };
        let mentioned = push.mentions_recipient();
        if !mentioned && settings.mention_only_groups.contains(&push.topic) {
            return PushDecision::drop("mention-only group");
        }
        if let Some(left) = settings.window_for(&push.recipient).and_then(|w| w.remaining_ms(cx.now_ms())) {
            return match settings.during_quiet.as_str() {
                "drop" => PushDecision::drop("quiet hours"),
                _ => PushDecision::Delay(left),
            };
        }
        if mentioned && !settings.mention_body.is_empty() {
            return PushDecision::body(settings.mention_body);
        }
        PushDecision::Keep
    }
}

palaver_plugin_sdk::push_filter!(QuietHours);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::json;
    use palaver_plugin_sdk::testing::Harness;

    const MANIFEST: &str = include_str!("../plugin.toml");
    const ALICE: &str = "usrAQAAAAAAAAA";
    /// 2026-01-01 23:30 UTC.
    const LATE: u64 = 1_767_310_200_000;

    fn harness(settings: Value) -> Harness<QuietHours> {
        let mut h = Harness::with_manifest(MANIFEST).unwrap();
        h.settings(settings);
        h.host.now_ms = LATE;
        h
    }

    #[test]
    fn nothing_configured_keeps_every_push() {
        assert_eq!(harness(json!({})).push(&Push::new(ALICE)), PushDecision::Keep);
    }

    #[test]
    fn quiet_hours_delay_until_they_end_or_drop() {
        let mut h = harness(json!({ "quiet_start": "22:00", "quiet_end": "07:00" }));
        // 23:30 to 07:00 is 7 h 30 min.
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::Delay(450 * 60_000));
        h.settings(json!({ "quiet_start": "22:00", "quiet_end": "07:00", "during_quiet": "drop" }));
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::drop("quiet hours"));
        // One hour east of UTC it is 00:30 locally, still quiet; outside the hours the push is kept.
        h.settings(json!({ "quiet_start": "01:00", "quiet_end": "07:00", "utc_offset_minutes": 60 }));
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::Keep);
    }

    #[test]
    fn a_users_own_hours_replace_the_tenants() {
        let users = json!({ ALICE: {} });
        let mut h = harness(json!({ "quiet_start": "22:00", "quiet_end": "07:00", "users": users }));
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::Keep, "an empty entry turns the hours off");
        assert!(matches!(h.push(&Push::new("usrAgAAAAAAAAA")), PushDecision::Delay(_)));
        h.settings(json!({ "users": { ALICE: { "start": "23:00", "end": "23:45" } } }));
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::Delay(15 * 60_000));
    }

    #[test]
    fn mention_only_groups_push_the_mentioned_only() {
        let mut h = harness(json!({ "mention_only_groups": ["grpTest"], "mention_body": "You were mentioned" }));
        assert_eq!(h.push(&Push::new(ALICE)), PushDecision::drop("mention-only group"));
        let mut p = Push::new(ALICE);
        p.mentions = vec![ALICE.to_owned()];
        assert_eq!(h.push(&p), PushDecision::body("You were mentioned"));
        p.silent = true;
        p.mentions.clear();
        assert_eq!(h.push(&p), PushDecision::Keep, "silent pushes show nothing and are kept");
    }

    #[test]
    fn malformed_hours_are_no_hours() {
        assert_eq!(minutes("7:05"), Some(425));
        assert_eq!(minutes("24:00"), None);
        assert_eq!(Window::parse("22:00", "22:00", 0), None);
        assert_eq!(
            harness(json!({ "quiet_start": "late", "quiet_end": "07:00" })).push(&Push::new(ALICE)),
            PushDecision::Keep
        );
    }
}
