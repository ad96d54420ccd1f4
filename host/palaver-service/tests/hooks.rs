//! The publish hook in the publish path: allow, reject (no seq taken, nothing stored), rewrite, and hold
//! (stored pending, visible to the sender only, delivered on release).

mod harness;

use harness::{Client, data, service_with_hooks};
use palaver_core::ports::{PublishContext, PublishHook, PublishVerdict};
use palaver_core::{AuditStatus, TenantId};
use palaver_service::ServiceConfig;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Judges by the text: "bad" is rejected, "rude" rewritten, "risky" held.
struct WordHook;

#[async_trait::async_trait]
impl PublishHook for WordHook {
    async fn before_publish(
        &self,
        _: &PublishContext,
        content: &Value,
        _: Option<&Map<String, Value>>,
    ) -> PublishVerdict {
        match content.as_str().unwrap_or_default() {
            "bad" => PublishVerdict::Reject { code: 403, reason: "blocked word".into() },
            "rude" => PublishVerdict::Rewrite { content: json!("***"), head: None },
            "risky" => PublishVerdict::Hold { flags: vec!["review".into()] },
            _ => PublishVerdict::Allow,
        }
    }
}

#[tokio::test]
async fn verdicts_shape_what_is_stored_and_delivered() {
    let svc = service_with_hooks(ServiceConfig::default(), Arc::new(WordHook));
    let mut a = Client::connect(&svc);
    a.signup("hooked", "pass123").await;
    let mut b = Client::connect(&svc);
    b.signup("reader", "pass123").await;
    let grp = a.new_group("Moderated").await;
    b.sub(&grp).await;

    let ctrl = a.publish(&grp, json!("bad")).await;
    assert_eq!(ctrl["code"], 403);
    assert_eq!(ctrl["text"], "blocked word");
    assert_eq!(a.publish(&grp, json!("fine")).await["params"]["seq"], 1, "a refused message takes no seq");
    assert_eq!(data(&b.drain())[0]["content"], "fine");

    a.publish(&grp, json!("rude")).await;
    assert_eq!(data(&b.drain())[0]["content"], "***");

    let ctrl = a.publish(&grp, json!("risky")).await;
    assert_eq!(ctrl["code"], 202);
    assert_eq!(ctrl["params"]["audit"], "pending");
    let held_seq = ctrl["params"]["seq"].as_i64().unwrap();
    assert!(data(&b.drain()).is_empty(), "a held message is not delivered");
    let (_, frames) = b.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 2, "and not readable by others");
    let (_, frames) = a.req("get", json!({ "topic": grp, "what": "data" })).await;
    assert_eq!(data(&frames).len(), 3, "but its sender sees it");

    svc.set_message_audit(TenantId::DEFAULT, &grp, held_seq, AuditStatus::Pass).await.unwrap();
    let got = data(&b.drain());
    assert_eq!(got[0]["content"], "risky", "released messages are delivered");
    assert_eq!(got[0]["seq"], held_seq);
}
