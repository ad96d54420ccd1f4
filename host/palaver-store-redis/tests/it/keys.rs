//! The keys the adapters actually write, read back from Redis under the default prefix `im` (with a tenant
//! id no other run uses) and compared with the documented literal names; and tenants that use the same topic
//! names, users and message ids without meeting.

use crate as common;
use crate::{group, msg};
use palaver_core::ports::{IdempotencyStore, MessageStore, PresenceStore, SeqAllocator, SubscriptionStore, TopicStore};
use palaver_core::{PresenceMeta, TenantId, UserId};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{CachedStorage, HotPolicy, RedisConfig, RedisIdempotency, RedisPresence, RedisSeq};
use std::collections::BTreeSet;
use std::sync::Arc;

#[tokio::test]
async fn adapters_write_the_documented_key_names() {
    let config = RedisConfig { key_prefix: "im".into(), ..common::config("keys") };
    let Some(client) = common::live(config).await else { return };
    // A random tenant id keeps this run's `im:` keys apart from any other user of the server.
    let tenant = TenantId(1_000_000 + u64::from(rand::random::<u32>()));
    let (t, topic, uid) = (tenant.0, "grpKeys", UserId(42));

    let floor = RedisSeq::new(client.clone()).next_seq(tenant, topic, 0).await.unwrap();
    RedisIdempotency::new(client.clone()).claim(tenant, topic, uid, "cmid-1").await.unwrap();
    let presence = RedisPresence::new(client.clone(), "node-a");
    let meta = PresenceMeta { node_id: "node-a".into(), device: None, user_agent: None, now: common::now() };
    presence.mark_online(tenant, uid, "s1", &meta).await.unwrap();
    presence.join_topic(tenant, topic, uid).await.unwrap();
    let stack = CachedStorage::over(client.clone(), Arc::new(MemoryStore::new()), HotPolicy::Groups);
    stack.create_topic(tenant, &group(topic)).await.unwrap();
    stack.upsert_sub(tenant, &common::sub(topic, 42)).await.unwrap();
    stack.append(tenant, &msg(topic, floor, 42)).await.unwrap();

    let pattern = format!("im:{t}:*");
    let mut found = BTreeSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) =
            common::raw(&client, redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(1000))
                .await;
        found.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let expected: BTreeSet<String> = [
        format!("im:{t}:topic:grpKeys:last_seq"),
        format!("im:{t}:topic:grpKeys:uniq:msg:42:cmid-1"),
        format!("im:{t}:presence:user:42"),
        format!("im:{t}:presence:user:42:sessions"),
        format!("im:{t}:presence:node:node-a:users"),
        format!("im:{t}:topic:grpKeys:online_members"),
        format!("im:{t}:topic:grpKeys:node:node-a:online_members"),
        format!("im:{t}:topic:grpKeys:online_nodes"),
        format!("im:{t}:topic:grpKeys:hot_msg_seqs"),
        format!("im:{t}:topic:grpKeys:hot_msg:1"),
        format!("im:{t}:hot_msg_index"),
        format!("im:{t}:cache:topic:grpKeys"),
        format!("im:{t}:cache:topic:grpKeys:subs"),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
    // Only the seq counter and the node's user set are meant to outlive their writers.
    for key in &found {
        let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(key)).await;
        let lasting = key.ends_with(":last_seq") || key.ends_with(":users");
        assert_eq!(ttl == -1, lasting, "{key} has TTL {ttl}");
    }
    for key in &found {
        let _: i64 = common::raw(&client, redis::cmd("DEL").arg(key)).await;
    }
}

#[tokio::test]
async fn equal_names_in_two_tenants_never_meet() {
    let Some(client) = common::client("keys-tenants").await else { return };
    let (a, b) = (TenantId(7), TenantId(8));
    let (seq, idem) = (RedisSeq::new(client.clone()), RedisIdempotency::new(client.clone()));
    let presence = RedisPresence::new(client.clone(), "n1");
    for _ in 0..3 {
        seq.next_seq(a, "grpSame", 0).await.unwrap();
    }
    assert_eq!(seq.next_seq(b, "grpSame", 0).await.unwrap(), 1, "b's counter is its own");
    assert_eq!(idem.claim(a, "grpSame", UserId(1), "m").await.unwrap(), palaver_core::Claim::Acquired);
    idem.complete(a, "grpSame", UserId(1), "m", 3).await.unwrap();
    assert_eq!(idem.claim(b, "grpSame", UserId(1), "m").await.unwrap(), palaver_core::Claim::Acquired);
    let meta = PresenceMeta { node_id: "n1".into(), device: None, user_agent: None, now: common::now() };
    presence.mark_online(a, UserId(1), "s", &meta).await.unwrap();
    assert_eq!(presence.get_presence(b, UserId(1)).await, palaver_core::Presence::Offline { last_seen: None });
    presence.join_topic(a, "grpSame", UserId(1)).await.unwrap();
    assert!(presence.topic_members(b, "grpSame").await.unwrap().is_empty());

    let keys = client.keys();
    let pairs = [
        (keys.topic_last_seq(a, "grpSame"), keys.topic_last_seq(b, "grpSame")),
        (keys.topic_uniq_msg(a, "grpSame", UserId(1), "m"), keys.topic_uniq_msg(b, "grpSame", UserId(1), "m")),
        (keys.presence_user(a, UserId(1)), keys.presence_user(b, UserId(1))),
    ];
    for (in_a, in_b) in pairs {
        assert_ne!(in_a, in_b);
        assert!(in_a.contains(":7:") && in_b.contains(":8:"), "{in_a} / {in_b}");
    }
}
