//! Calls that succeed: allow, reject, rewrite and hold from real components; per-tenant enablement and settings;
//! the order plugins run in; business commands with their effects; directory reads; warm and ephemeral
//! instances; the metrics text.

use crate::common::{ACTOR, config, env, env_with, rejected};
use palaver_core::ports::{PublishVerdict, UserStore};
use palaver_core::{DefaultAccess, RecordState, TenantId, User};
use palaver_plugin_runtime::{
    CommandContext, CommandError, CommandOutcome, PluginState, PortsDirectory, RegistryError,
};
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn allow_all_allows_and_a_disabled_plugin_is_not_called() {
    let e = env();
    e.load("allow-all-1.0.0");
    assert_eq!(e.publish("anything").await, PublishVerdict::Allow);
    assert_eq!(e.info("allow-all").calls, 1);
    e.registry.set_enabled(TenantId(1), "allow-all", Some(false)).unwrap();
    assert_eq!(e.publish("anything").await, PublishVerdict::Allow);
    assert_eq!(e.info("allow-all").calls, 1, "disabled for tenant 1");
    assert_eq!(e.publish_as(2, json!("x")).await, PublishVerdict::Allow);
    assert_eq!(e.info("allow-all").calls, 2, "still enabled for tenant 2");
    assert_eq!(e.info("allow-all").state, PluginState::Active);
}

#[tokio::test]
async fn moderation_rejects_the_word_forbidden_by_default() {
    let e = env();
    e.load("moderation-0.1.0");
    assert_eq!(e.publish("hello there").await, PublishVerdict::Allow);
    let v = e.publish("this is FORBIDDEN").await;
    assert_eq!(rejected(&v), (422, "message contains a blocked word"));
    let drafty = json!({ "txt": "forbidden fruit", "fmt": [{ "at": 0, "len": 9, "tp": "ST" }] });
    assert!(matches!(e.publish_as(1, drafty).await, PublishVerdict::Reject { .. }));
    let info = e.info("moderation");
    assert_eq!((info.calls, info.faults), (3, 0));
}

#[tokio::test]
async fn moderation_holds_and_rewrites_by_each_tenants_settings() {
    let e = env();
    e.load("moderation-0.1.0");
    let strict = json!({ "words": [], "hold_words": ["refund"], "mask_words": ["darn"], "links": "hold" });
    e.registry.set_settings(TenantId(2), "moderation", Some(strict)).unwrap();
    assert_eq!(
        e.publish_as(2, json!("I want a refund")).await,
        PublishVerdict::Hold { flags: vec!["word".to_owned()] }
    );
    let link = e.publish_as(2, json!("see https://example.com")).await;
    assert_eq!(link, PublishVerdict::Hold { flags: vec!["link".to_owned()] });
    let masked = e.publish_as(2, json!("darn it")).await;
    assert_eq!(masked, PublishVerdict::Rewrite { content: json!("**** it"), head: None });
    assert_eq!(e.publish_as(2, json!("forbidden")).await, PublishVerdict::Allow, "tenant 2 replaced the word list");
    assert!(
        matches!(e.publish_as(1, json!("forbidden")).await, PublishVerdict::Reject { .. }),
        "tenant 1 keeps defaults"
    );
    assert_eq!(e.publish_as(1, json!("I want a refund")).await, PublishVerdict::Allow);
    let effective = e.registry.settings(TenantId(2), "moderation").unwrap();
    assert_eq!(effective["reject_code"], 422, "defaults fill what the tenant did not set");
}

#[tokio::test]
async fn settings_that_break_the_schema_are_refused() {
    let e = env();
    e.load("moderation-0.1.0");
    let err = e.registry.set_settings(TenantId(1), "moderation", Some(json!({ "words": "forbidden" }))).unwrap_err();
    assert!(matches!(err, RegistryError::Settings { .. }), "{err}");
    let err = e.registry.set_settings(TenantId(1), "moderation", Some(json!({ "links": "sometimes" }))).unwrap_err();
    assert!(err.to_string().contains("one of"), "{err}");
    assert!(e.registry.set_settings(TenantId(1), "nope", None).is_err());
}

#[tokio::test]
async fn plugins_run_by_priority_rewrites_chain_and_the_first_reject_wins() {
    let e = env();
    e.load("moderation-0.1.0");
    e.load("hello-0.1.0");
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    e.registry.set_settings(TenantId(1), "moderation", Some(json!({ "mask_words": ["darn"] }))).unwrap();
    // Moderation (priority 10) masks, then hello (priority 200) sees the masked text and adds its head.
    let v = e.publish("hello darn world").await;
    let PublishVerdict::Rewrite { content, head } = v else { panic!("expected a rewrite, got {v:?}") };
    assert_eq!(content, json!("hello **** world"));
    assert_eq!(head.unwrap()["mood"], "friendly");
    let before = e.info("hello").calls;
    assert!(matches!(e.publish("hello forbidden").await, PublishVerdict::Reject { .. }));
    assert_eq!(e.info("hello").calls, before, "a rejection stops the chain");
}

#[tokio::test]
async fn commands_run_on_the_plugin_that_declares_them_and_apply_their_effects() {
    let e = env();
    e.load("hello-0.1.0");
    let ctx = CommandContext::new(TenantId(1), ACTOR);
    assert!(
        matches!(e.hooks.run_command(&ctx, "hello.greet", &json!({})).await, Err(CommandError::UnknownCommand(_))),
        "hello is disabled by default"
    );
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    let ok = e.hooks.run_command(&ctx, "hello.greet", &json!({ "name": "Ann" })).await.unwrap();
    assert_eq!(ok, CommandOutcome::Ok(json!({ "greeting": "Hello, Ann!", "count": 1 })));
    let ok = e.hooks.run_command(&ctx, "hello.greet", &json!({ "name": "Bo" })).await.unwrap();
    assert_eq!(ok, CommandOutcome::Ok(json!({ "greeting": "Hello, Bo!", "count": 2 })));
    assert_eq!(e.keys("hello"), vec![("greetings".to_owned(), b"2".to_vec())]);
    let events = e.effects.events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].1.name, "hello.greeted");
    assert_eq!(events[1].1.payload, json!({ "name": "Bo", "count": 2 }));
    let refused = e.hooks.run_command(&ctx, "hello.greet", &json!({ "name": " " })).await.unwrap();
    assert!(
        matches!(refused, CommandOutcome::Rejected { code: 400, ref reason_code, .. } if reason_code == "NAME_REQUIRED")
    );
    assert!(matches!(
        e.hooks.run_command(&ctx, "nobody.home", &json!(null)).await,
        Err(CommandError::UnknownCommand(_))
    ));
}

#[tokio::test]
async fn the_directory_reads_the_tenants_users_through_the_ports() {
    let store = Arc::new(palaver_store_memory::MemoryStore::new());
    let user = User {
        id: ACTOR,
        created: 1_700_000_000_000,
        updated: 1_700_000_000_000,
        state: RecordState::Active,
        auth_version: 1,
        defacs: DefaultAccess::USER,
        public: Some(json!({ "fn": "Ann" })),
        trusted: None,
        tags: vec!["staff".to_owned()],
        last_seen: None,
        user_agent: None,
    };
    store.create_user(TenantId(1), &user, None).await.unwrap();
    let dir = Arc::new(PortsDirectory::new(store.clone(), store.clone(), store.clone()));
    let e = env_with(config(), |s| s.with_directory(dir));
    e.load("hello-0.1.0");
    e.registry.set_enabled(TenantId(1), "hello", Some(true)).unwrap();
    e.registry.set_enabled(TenantId(2), "hello", Some(true)).unwrap();
    let me = e.hooks.run_command(&CommandContext::new(TenantId(1), ACTOR), "hello.whoami", &json!(null)).await.unwrap();
    let id = ACTOR.to_string();
    assert_eq!(me, CommandOutcome::Ok(json!({ "id": id, "tags": ["staff"], "active": true, "greeting": "Hello" })));
    let other =
        e.hooks.run_command(&CommandContext::new(TenantId(2), ACTOR), "hello.whoami", &json!(null)).await.unwrap();
    assert!(matches!(other, CommandOutcome::Rejected { code: 404, .. }), "tenant 2 has no such user: {other:?}");
}

#[tokio::test]
async fn warm_instances_are_reused_and_ephemeral_ones_are_not() {
    let e = env();
    e.load("ruled-1.0.0");
    e.load("allow-all-1.0.0");
    let (ruled0, allow0) = (e.info("ruled").instantiations, e.info("allow-all").instantiations);
    for _ in 0..20 {
        e.publish("nothing to see").await;
    }
    assert!(e.info("ruled").instantiations - ruled0 <= 1, "warm: one instance serves every sequential call");
    assert_eq!(e.info("allow-all").instantiations - allow0, 20, "ephemeral: one instance per call");
}

#[tokio::test]
async fn metrics_render_every_family_with_plugin_labels() {
    let e = env();
    e.load("moderation-0.1.0");
    e.publish("forbidden").await;
    let text = e.registry.render_metrics();
    for family in [
        "palaver_plugin_info{plugin=\"moderation\",version=\"0.1.0\"",
        "palaver_plugin_calls_total{plugin=\"moderation\",hook=\"before-publish\"} 1",
        "palaver_plugin_rejects_total{plugin=\"moderation\",hook=\"before-publish\"} 1",
        "palaver_plugin_verdicts_total{plugin=\"moderation\",hook=\"before-publish\",verdict=\"reject\"} 1",
        "palaver_plugin_faults_total{plugin=\"moderation\",hook=\"before-publish\",kind=\"trap\"} 0",
        "palaver_plugin_call_duration_seconds_count{plugin=\"moderation\",hook=\"before-publish\"} 1",
        "palaver_plugin_fuel_consumed_total{plugin=\"moderation\",hook=\"before-publish\"}",
        "palaver_plugin_breaker_open{plugin=\"moderation\"} 0",
        "palaver_plugin_loads_total{plugin=\"moderation\"} 1",
    ] {
        assert!(text.contains(family), "missing {family} in\n{text}");
    }
}

#[tokio::test]
async fn unload_removes_a_plugin() {
    let e = env();
    e.load("moderation-0.1.0");
    e.registry.unload("moderation").unwrap();
    assert_eq!(e.publish("forbidden").await, PublishVerdict::Allow);
    assert!(e.registry.list().is_empty());
    assert!(matches!(e.registry.unload("moderation"), Err(RegistryError::UnknownPlugin(_))));
}
