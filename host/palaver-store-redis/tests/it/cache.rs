//! Cache-aside copies of users, topics and subscriptions against a real Redis over the in-memory store: hits,
//! invalidation after every write, coherence with message writes, no credentials in Redis, tenant isolation.

use crate as common;
use crate::{group, msg, sub, user};
use palaver_core::ports::{MessageStore, SubscriptionStore, TopicStore, UserStore};
use palaver_core::{AccessMode, AuthRecord, DeleteMessages, SeqRange, TenantId, TopicUpdate, UserId, UserUpdate};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{CachedStorage, HotPolicy, RedisClient, RedisConfig};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(7);

async fn rig(test: &str) -> Option<(RedisClient, MemoryStore, CachedStorage)> {
    let client = common::client(test).await?;
    let inner = MemoryStore::new();
    let stack = CachedStorage::over(client.clone(), Arc::new(inner.clone()), HotPolicy::Never);
    Some((client, inner, stack))
}

fn hits(client: &RedisClient) -> u64 {
    client.metrics().snapshot().cache_hits
}

/// Waits out the invalidation grace, after which fills are accepted again.
async fn after_grace() {
    tokio::time::sleep(Duration::from_millis(RedisConfig::default().cache_invalidation_grace_ms + 100)).await;
}

/// Every key and value under the client's prefix, to look for what must never be stored.
async fn dump(client: &RedisClient) -> String {
    let pattern = format!("{}:*", client.keys().prefix());
    let keys: Vec<String> = common::raw(client, redis::cmd("KEYS").arg(&pattern)).await;
    let mut out = keys.join("\n");
    for key in keys {
        let kind: String = common::raw(client, redis::cmd("TYPE").arg(&key)).await;
        let value: Vec<String> = match kind.as_str() {
            "string" => vec![common::raw(client, redis::cmd("GET").arg(&key)).await],
            "hash" => common::raw(client, redis::cmd("HGETALL").arg(&key)).await,
            _ => Vec::new(),
        };
        out.push_str(&value.join("\n"));
    }
    out
}

#[tokio::test]
async fn users_are_cached_and_dropped_on_every_write() {
    let Some((client, inner, stack)) = rig("cache-users").await else { return };
    let auth = AuthRecord { user: UserId(10), login: "alice".into(), secret_hash: "$argon2id$SECRET-HASH".into() };
    stack.create_user(T, &user(10), Some(&auth)).await.unwrap();
    after_grace().await;
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap(), Some(user(10)), "miss, then filled");
    let before = hits(&client);
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap(), Some(user(10)));
    assert_eq!(hits(&client), before + 1, "the second read is a hit");

    // A change behind the decorator's back is not seen: the copy answers, as a cache does.
    inner.touch_user(T, UserId(10), 5, None).await.unwrap();
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap().unwrap().last_seen, None);

    let update = UserUpdate { updated: 9, tags: Some(vec!["new".into()]), ..UserUpdate::default() };
    stack.update_user(T, UserId(10), &update).await.unwrap();
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap().unwrap().tags, vec!["new".to_owned()]);
    stack.touch_user(T, UserId(10), 77, Some("ua")).await.unwrap();
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap().unwrap().last_seen, Some(77));
    assert_eq!(stack.set_secret(T, UserId(10), "$argon2id$OTHER-HASH", &[]).await.unwrap(), 1);
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap().unwrap().auth_version, 1, "revocation is seen at once");
    assert_eq!(stack.find_auth(T, "ALICE").await.unwrap().unwrap().secret_hash, "$argon2id$OTHER-HASH");
    after_grace().await;
    stack.get_user(T, UserId(10)).await.unwrap();
    let stored = dump(&client).await;
    assert!(stored.contains("auth_version"), "the user copy is there");
    assert!(!stored.contains("HASH") && !stored.contains("argon2"), "no credential reaches Redis: {stored}");
}

#[tokio::test]
async fn topics_stay_coherent_with_message_writes() {
    let Some((client, _inner, stack)) = rig("cache-topics").await else { return };
    stack.create_topic(T, &group("grpC")).await.unwrap();
    after_grace().await;
    assert_eq!(stack.get_topic(T, "grpC").await.unwrap().unwrap().seq, 0);
    for seq in 1..=3 {
        stack.append(T, &msg("grpC", seq, 1)).await.unwrap();
    }
    let before = hits(&client);
    let topic = stack.get_topic(T, "grpC").await.unwrap().unwrap();
    assert_eq!((topic.seq, topic.touched), (3, msg("grpC", 3, 1).created), "patched, not dropped");
    assert_eq!(hits(&client), before + 1);
    let hard = DeleteMessages {
        ranges: vec![SeqRange { low: 1, hi: 2 }],
        hard: true,
        for_user: UserId(1),
        when: 1,
        recalled_by: None,
    };
    stack.delete_messages(T, "grpC", &hard).await.unwrap();
    assert_eq!(stack.get_topic(T, "grpC").await.unwrap().unwrap().del_id, 1);
    assert_eq!(hits(&client), before + 2);

    let update = TopicUpdate { updated: 5, public: Some(serde_json::json!({ "fn": "New" })), ..TopicUpdate::default() };
    stack.update_topic(T, "grpC", &update).await.unwrap();
    let topic = stack.get_topic(T, "grpC").await.unwrap().unwrap();
    assert_eq!((topic.public, topic.seq), (Some(serde_json::json!({ "fn": "New" })), 3));
    // Within the grace period the invalidation blocks fills, so an older concurrent read cannot land.
    let raw: Option<String> =
        common::raw(&client, redis::cmd("HGET").arg(client.keys().cache_topic(T, "grpC")).arg("json")).await;
    assert_eq!(raw, None, "no fill during the grace period");

    stack.delete_topic(T, "grpC").await.unwrap();
    assert_eq!(stack.get_topic(T, "grpC").await.unwrap(), None);
    stack.create_topic(T, &group("grpC")).await.unwrap();
    assert_eq!(stack.get_topic(T, "grpC").await.unwrap().unwrap().seq, 0, "a re-created topic starts afresh");
}

#[tokio::test]
async fn subscriptions_are_cached_and_follow_writes_and_soft_deletes() {
    let Some((client, inner, stack)) = rig("cache-subs").await else { return };
    stack.create_topic(T, &group("grpS")).await.unwrap();
    stack.upsert_sub(T, &sub("grpS", 1)).await.unwrap();
    stack.append(T, &msg("grpS", 1, 2)).await.unwrap();
    after_grace().await;
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap(), Some(sub("grpS", 1)));
    let before = hits(&client);
    assert!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().is_some());
    assert_eq!(hits(&client), before + 1);
    inner.update_sub_cursors(T, "grpS", UserId(1), Some(1), None).await.unwrap();
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().unwrap().recv, 0, "served from the copy");

    assert_eq!(stack.update_sub_cursors(T, "grpS", UserId(1), None, Some(1)).await.unwrap(), (1, 1));
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().unwrap().read, 1);
    stack.update_sub_mode(T, "grpS", UserId(1), AccessMode::READ, AccessMode::READ, 3).await.unwrap();
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().unwrap().given, AccessMode::READ);
    after_grace().await;
    assert!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().is_some(), "filled again after the grace");
    let soft = DeleteMessages {
        ranges: vec![SeqRange { low: 1, hi: 2 }],
        hard: false,
        for_user: UserId(1),
        when: 4,
        recalled_by: None,
    };
    stack.delete_messages(T, "grpS", &soft).await.unwrap();
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap().unwrap().del_id, 1, "the soft delete dropped it");
    stack.delete_sub(T, "grpS", UserId(1), 5).await.unwrap();
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap(), None);
    stack.upsert_sub(T, &sub("grpS", 1)).await.unwrap();
    assert_eq!(stack.get_sub(T, "grpS", UserId(1)).await.unwrap(), Some(sub("grpS", 1)));
}

#[tokio::test]
async fn equal_names_in_two_tenants_use_different_keys() {
    let Some((client, _inner, stack)) = rig("cache-tenants").await else { return };
    let (a, b) = (TenantId(7), TenantId(8));
    let (ga, gb) = (group("grpSame"), palaver_core::Topic { public: None, ..group("grpSame") });
    stack.create_topic(a, &ga).await.unwrap();
    stack.create_topic(b, &gb).await.unwrap();
    stack.create_user(a, &user(10), None).await.unwrap();
    after_grace().await;
    for _ in 0..2 {
        assert_eq!(stack.get_topic(a, "grpSame").await.unwrap(), Some(ga.clone()));
        assert_eq!(stack.get_topic(b, "grpSame").await.unwrap(), Some(gb.clone()));
        assert_eq!(stack.get_user(b, UserId(10)).await.unwrap(), None);
    }
    let keys = client.keys();
    assert_ne!(keys.cache_topic(a, "grpSame"), keys.cache_topic(b, "grpSame"));
    let both: i64 = common::raw(
        &client,
        redis::cmd("EXISTS").arg(keys.cache_topic(a, "grpSame")).arg(keys.cache_topic(b, "grpSame")),
    )
    .await;
    assert_eq!(both, 2);
    assert_eq!(keys.topic_last_seq(a, "grpSame").replace(":7:", ":8:"), keys.topic_last_seq(b, "grpSame"));
}
