//! Palaver's example listener: forwards stored messages and account changes to the tenant's URL as JSON POSTs,
//! signed with HMAC-SHA256 so the receiver can tell them from forgeries and replays (the scheme is in README.md).
//!
//! The host delivers at least once, so a delivery may repeat: `X-Palaver-Delivery` names the event (the same on
//! every retry) for the receiver to drop duplicates. A non-2xx answer or a failed request is an `Err`, which makes
//! the host deliver again later (and counts towards the plugin's circuit breaker for the tenant).

use palaver_plugin_sdk::http::{Request, sign_webhook};
use palaver_plugin_sdk::{AccountEvent, Context, Host, Level, Listener, Published, TopicKind, json};
use serde::Deserialize;

/// The tenant's settings.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Settings {
    url: String,
    secret: String,
    events: Vec<String>,
    topics: Vec<String>,
}

/// Forwards events; keeps nothing between calls.
#[derive(Default)]
pub struct Webhook;

fn kind(k: TopicKind) -> &'static str {
    match k {
        TopicKind::Group => "group",
        TopicKind::P2p => "p2p",
        TopicKind::Me => "me",
        TopicKind::Fnd => "fnd",
        TopicKind::Sys => "sys",
    }
}

/// The settings when `event` is to be forwarded and the webhook is configured; `None` to skip.
fn wanted<H: Host>(cx: &mut Context<'_, H>, event: &str) -> Result<Option<Settings>, String> {
    let s: Settings = cx.settings().map_err(|e| format!("settings: {e}"))?;
    if !s.events.iter().any(|e| e == event) {
        return Ok(None);
    }
    if s.url.is_empty() || s.secret.is_empty() {
        cx.log(Level::Warn, "webhook: url or secret not set; nothing is sent");
        return Ok(None);
    }
    Ok(Some(s))
}

/// POSTs `body` signed, and turns anything but a 2xx into an `Err` (delivered again later).
fn deliver<H: Host>(cx: &mut Context<'_, H>, s: &Settings, event: &str, id: &str, body: &[u8]) -> Result<(), String> {
    let timestamp = cx.now_ms() / 1000;
    let req = Request::post(&s.url, body)
        .header("content-type", "application/json")
        .header("x-palaver-event", event)
        .header("x-palaver-delivery", id)
        .header("x-palaver-timestamp", &timestamp.to_string())
        .header("x-palaver-signature", &sign_webhook(s.secret.as_bytes(), timestamp, body));
    match cx.http().send(&req) {
        Ok(resp) if resp.is_success() => Ok(()),
        Ok(resp) => Err(format!("the receiver answered {}", resp.status)),
        Err(e) => Err(format!("not delivered: {e}")),
    }
}

impl Listener for Webhook {
    fn after_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Published) -> Result<(), String> {
        let Some(s) = wanted(cx, "message")? else { return Ok(()) };
        if !s.topics.is_empty() && !s.topics.contains(&msg.topic) {
            return Ok(());
        }
        let tenant = cx.call().tenant;
        let body = json!({
            "event": "message",
            "tenant": tenant,
            "topic": msg.topic,
            "topic_kind": kind(msg.topic_kind),
            "seq": msg.seq,
            "ts_ms": msg.ts_ms,
            "sender": msg.sender,
            "content": msg.content,
            "head": msg.head,
            "attempt": msg.attempt,
        });
        let id = format!("message:{tenant}:{}:{}", msg.topic, msg.seq);
        deliver(cx, &s, "message", &id, body.to_string().as_bytes())
    }

    fn on_account<H: Host>(&mut self, cx: &mut Context<'_, H>, event: &AccountEvent) -> Result<(), String> {
        let Some(s) = wanted(cx, "account")? else { return Ok(()) };
        let tenant = cx.call().tenant;
        let body = json!({
            "event": "account",
            "tenant": tenant,
            "id": event.id,
            "user": event.user,
            "actor": event.actor,
            "by_operator": event.by_operator,
            "change": event.change.as_str(),
            "ts_ms": event.ts_ms,
            "public": event.public,
            "tags": event.tags,
            "attempt": event.attempt,
        });
        // The host's event id, the same on every delivery (two changes in the same millisecond differ by it).
        let id = format!("account:{tenant}:{}", event.id);
        deliver(cx, &s, "account", &id, body.to_string().as_bytes())
    }
}

palaver_plugin_sdk::listener!(Webhook);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::http::{HttpError, Response, verify_webhook};
    use palaver_plugin_sdk::testing::Harness;
    use palaver_plugin_sdk::{AccountChange, Value, json};

    const MANIFEST: &str = include_str!("../plugin.toml");

    fn harness(settings: Value) -> Harness<Webhook> {
        let mut h = Harness::<Webhook>::with_manifest(MANIFEST).unwrap();
        h.settings(settings);
        h.host.now_ms = 1_700_000_000_123;
        h
    }

    fn configured() -> Value {
        json!({ "url": "https://hooks.example.com/in", "secret": "s3cret" })
    }

    #[test]
    fn a_message_is_posted_signed_over_timestamp_and_body() {
        let mut h = harness(configured());
        h.host.http_responses.push_back(Ok(Response::new(204, "")));
        let mut msg = Published::new("hello");
        msg.seq = 7;
        assert_eq!(h.after_publish(&msg), Ok(()));
        let req = &h.host.http_requests[0];
        assert_eq!((req.method.as_str(), req.url.as_str()), ("POST", "https://hooks.example.com/in"));
        let header = |n: &str| req.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(header("x-palaver-timestamp"), "1700000000");
        assert_eq!(header("x-palaver-event"), "message");
        assert_eq!(header("x-palaver-delivery"), "message:1:grpTest:7");
        assert!(verify_webhook(b"s3cret", 1_700_000_000, &req.body, &header("x-palaver-signature")));
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(body["content"], "hello");
        assert_eq!((body["seq"].as_i64(), body["topic_kind"].as_str()), (Some(7), Some("group")));
    }

    #[test]
    fn a_failed_delivery_is_an_err_so_the_host_retries() {
        let mut h = harness(configured());
        h.host.http_responses.push_back(Ok(Response::new(500, "oops")));
        h.host.http_responses.push_back(Err(HttpError::Timeout));
        h.host.http_responses.push_back(Ok(Response::new(302, "")));
        let msg = Published::new("hello");
        assert!(h.after_publish(&msg).unwrap_err().contains("500"));
        assert!(h.after_publish(&msg).unwrap_err().contains("timeout"));
        assert!(h.after_publish(&msg).unwrap_err().contains("302"), "a redirect is no delivery");
    }

    #[test]
    fn events_and_topics_filter_what_is_sent() {
        let mut h = harness(json!({ "url": "https://h.example/", "secret": "s", "events": ["account"] }));
        assert_eq!(h.after_publish(&Published::new("hi")), Ok(()));
        assert!(h.host.http_requests.is_empty(), "messages are not chosen");
        h.host.http_responses.push_back(Ok(Response::new(200, "")));
        assert_eq!(h.on_account(&AccountEvent::new("usrA", AccountChange::Deleted)), Ok(()));
        let body: Value = serde_json::from_slice(&h.host.http_requests[0].body).unwrap();
        assert_eq!((body["event"].as_str(), body["change"].as_str()), (Some("account"), Some("deleted")));
        assert_eq!(body["by_operator"], false);

        let mut h = harness(json!({ "url": "https://h.example/", "secret": "s", "topics": ["grpOther"] }));
        assert_eq!(h.after_publish(&Published::new("hi")), Ok(()));
        assert!(h.host.http_requests.is_empty(), "another topic");
    }

    #[test]
    fn an_account_change_is_named_by_its_event_id_and_says_who_made_it() {
        let mut h = harness(configured());
        for change in [AccountChange::Suspended, AccountChange::Reactivated] {
            h.host.http_responses.push_back(Ok(Response::new(204, "")));
            let mut event = AccountEvent::new("usrA", change);
            (event.id, event.by_operator, event.attempt) = ("9f3c".to_owned(), true, 2);
            assert_eq!(h.on_account(&event), Ok(()));
        }
        for (req, change) in h.host.http_requests.iter().zip(["suspended", "reactivated"]) {
            let header = |n: &str| req.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap();
            assert_eq!(header("x-palaver-delivery"), "account:1:9f3c", "the same on every delivery");
            assert_eq!(header("x-palaver-event"), "account");
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            assert_eq!((body["change"].as_str(), body["id"].as_str()), (Some(change), Some("9f3c")));
            assert_eq!((body["by_operator"].as_bool(), body["actor"].as_str()), (Some(true), Some("usrA")));
        }
    }

    #[test]
    fn without_url_or_secret_nothing_is_sent() {
        for settings in [json!({}), json!({ "url": "https://h.example/" }), json!({ "secret": "s" })] {
            let mut h = harness(settings);
            assert_eq!(h.after_publish(&Published::new("hi")), Ok(()));
            assert!(h.host.http_requests.is_empty());
        }
    }

    #[test]
    fn the_fixtures_pass() {
        assert_eq!(palaver_plugin_sdk::testing::run_listener_fixtures::<Webhook>(MANIFEST).unwrap(), 3);
    }
}
