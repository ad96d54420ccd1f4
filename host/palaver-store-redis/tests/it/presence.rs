//! Presence against a real Redis: the documented hash fields, session counting across nodes, last-seen, TTL
//! expiry of a dead node's sessions, and the group online-member sets.

use crate as common;
use palaver_core::ports::PresenceStore;
use palaver_core::{Presence, PresenceMeta, TenantId, UserId};
use palaver_store_redis::{RedisConfig, RedisPresence};
use std::collections::HashMap;
use std::time::Duration;

const T: TenantId = TenantId(7);

fn meta(node: &str, now: i64) -> PresenceMeta {
    PresenceMeta { node_id: node.into(), device: Some("web".into()), user_agent: Some("tinode-js/1".into()), now }
}

#[tokio::test]
async fn sessions_count_and_the_last_one_leaving_records_last_seen() {
    let Some(client) = common::client("presence-life").await else { return };
    let p = RedisPresence::new(client.clone(), "n1");
    let u = UserId(42);
    let t0 = common::now();
    assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: None });
    assert_eq!(p.mark_online(T, u, "s1", &meta("n1", t0)).await.unwrap(), 1);
    assert_eq!(p.mark_online(T, u, "s2", &meta("n1", t0 + 10)).await.unwrap(), 2);
    assert_eq!(p.mark_online(T, u, "s2", &meta("n1", t0 + 15)).await.unwrap(), 2, "same session counts once");
    p.refresh(T, u, "s1", t0 + 50).await.unwrap();
    p.refresh(T, u, "unknown", t0 + 60).await.unwrap();
    assert_eq!(
        p.get_presence(T, u).await,
        Presence::Online { sessions: 2, node_id: "n1".into(), last_active: t0 + 50 }
    );
    assert_eq!(p.get_presence(TenantId(8), u).await, Presence::Offline { last_seen: None }, "tenants apart");

    let hash: HashMap<String, String> =
        common::raw(&client, redis::cmd("HGETALL").arg(client.keys().presence_user(T, u))).await;
    assert_eq!(hash.get("online").map(String::as_str), Some("1"));
    assert_eq!(hash.get("session_count").map(String::as_str), Some("2"));
    assert_eq!(hash.get("device").map(String::as_str), Some("web"));
    assert_eq!(hash.get("ua").map(String::as_str), Some("tinode-js/1"));
    assert_eq!(p.node_users(T, "n1").await.unwrap(), vec![u]);

    assert_eq!(p.mark_offline(T, u, "s1", t0 + 100).await.unwrap(), 1);
    assert!(matches!(p.get_presence(T, u).await, Presence::Online { sessions: 1, .. }));
    assert_eq!(p.node_users(T, "n1").await.unwrap(), vec![u], "s2 still holds the user on n1");
    assert_eq!(p.mark_offline(T, u, "s2", t0 + 200).await.unwrap(), 0);
    assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: Some(t0 + 200) });
    assert_eq!(p.mark_offline(T, u, "s2", t0 + 300).await.unwrap(), 0, "leaving twice is harmless");
    assert_eq!(p.get_presence(T, u).await, Presence::Offline { last_seen: Some(t0 + 200) });
    assert!(p.node_users(T, "n1").await.unwrap().is_empty());

    let hash: HashMap<String, String> =
        common::raw(&client, redis::cmd("HGETALL").arg(client.keys().presence_user(T, u))).await;
    assert_eq!((hash["online"].as_str(), hash["session_count"].as_str()), ("0", "0"));
    assert_eq!(hash["last_seen_at"], (t0 + 200).to_string());
}

#[tokio::test]
async fn equal_session_ids_on_two_nodes_are_two_sessions() {
    let Some(client) = common::client("presence-nodes").await else { return };
    let (a, b) = (RedisPresence::new(client.clone(), "n1"), RedisPresence::new(client, "n2"));
    let u = UserId(5);
    let now = common::now();
    assert_eq!(a.mark_online(T, u, "1", &meta("n1", now)).await.unwrap(), 1);
    assert_eq!(b.mark_online(T, u, "1", &meta("n2", now + 1)).await.unwrap(), 2);
    assert_eq!(a.mark_offline(T, u, "1", now + 2).await.unwrap(), 1);
    assert_eq!(
        b.get_presence(T, u).await,
        Presence::Online { sessions: 1, node_id: "n2".into(), last_active: now + 1 }
    );
    assert!(a.node_users(T, "n1").await.unwrap().is_empty());
    assert_eq!(a.node_users(T, "n2").await.unwrap(), vec![u]);
}

#[tokio::test]
async fn presence_expires_without_heartbeats_and_a_dead_nodes_sessions_age_out() {
    let config = RedisConfig { presence_ttl_seconds: 2, ..common::config("presence-ttl") };
    let Some(client) = common::live(config).await else { return };
    let (dead, alive) = (RedisPresence::new(client.clone(), "dead"), RedisPresence::new(client, "alive"));
    let (lonely, shared) = (UserId(1), UserId(2));
    let now = common::now();
    dead.mark_online(T, lonely, "s", &meta("dead", now)).await.unwrap();
    dead.mark_online(T, shared, "s", &meta("dead", now)).await.unwrap();
    alive.mark_online(T, shared, "s", &meta("alive", now)).await.unwrap();
    assert!(matches!(alive.get_presence(T, shared).await, Presence::Online { sessions: 2, .. }));
    // Only the live node keeps heartbeating; the dead node's sessions must stop counting.
    // Heartbeats every 500 ms leave 1.5 s of slack against the 2 s TTL on a loaded machine.
    for i in 1..=10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        alive.refresh(T, shared, "s", now + i * 500).await.unwrap();
    }
    assert_eq!(alive.get_presence(T, lonely).await, Presence::Offline { last_seen: None }, "expired by TTL");
    assert_eq!(
        alive.get_presence(T, shared).await,
        Presence::Online { sessions: 1, node_id: "alive".into(), last_active: now + 5000 },
        "the dead node's session aged out while the user's key stayed alive"
    );
}

#[tokio::test]
async fn topic_online_members_follow_joins_and_leaves_per_node() {
    let Some(client) = common::client("presence-topic").await else { return };
    let (a, b) = (RedisPresence::new(client.clone(), "n1"), RedisPresence::new(client.clone(), "n2"));
    let (u1, u2) = (UserId(1), UserId(2));
    let sorted = |mut v: Vec<UserId>| {
        v.sort();
        v
    };
    a.join_topic(T, "grpBig", u1).await.unwrap();
    a.join_topic(T, "grpBig", u2).await.unwrap();
    b.join_topic(T, "grpBig", u2).await.unwrap();
    let mut nodes = a.topic_nodes(T, "grpBig").await.unwrap();
    nodes.sort();
    assert_eq!(nodes, vec!["n1".to_owned(), "n2".to_owned()]);
    assert_eq!(sorted(a.topic_members(T, "grpBig").await.unwrap()), vec![u1, u2]);
    assert_eq!(sorted(a.topic_node_members(T, "grpBig", "n1").await.unwrap()), vec![u1, u2]);

    a.leave_topic(T, "grpBig", u2).await.unwrap();
    assert_eq!(sorted(a.topic_members(T, "grpBig").await.unwrap()), vec![u1, u2], "n2 still lists u2");
    b.leave_topic(T, "grpBig", u2).await.unwrap();
    assert_eq!(a.topic_members(T, "grpBig").await.unwrap(), vec![u1]);
    assert_eq!(a.topic_nodes(T, "grpBig").await.unwrap(), vec!["n1".to_owned()], "n2 holds nobody now");
    a.refresh_topic(T, "grpBig").await.unwrap();
    let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(client.keys().topic_online_members(T, "grpBig"))).await;
    assert!(ttl > 100, "refreshed to presence_ttl_seconds, got {ttl}");
    a.leave_topic(T, "grpBig", u1).await.unwrap();
    assert!(a.topic_nodes(T, "grpBig").await.unwrap().is_empty());
    assert!(a.topic_members(T, "grpBig").await.unwrap().is_empty());
    assert!(b.topic_members(TenantId(8), "grpBig").await.unwrap().is_empty(), "tenants apart");
}

#[tokio::test]
async fn attached_users_are_the_union_of_live_nodes_sets_and_a_dead_nodes_expire() {
    let config = RedisConfig { presence_ttl_seconds: 2, ..common::config("presence-attached") };
    let Some(client) = common::live(config).await else { return };
    let (n1, n2) = (RedisPresence::new(client.clone(), "n1"), RedisPresence::new(client.clone(), "n2"));
    let (ann, ben, cat) = (UserId(11), UserId(12), UserId(13));
    // Both nodes hold their id claims (a node's registry entry, which a dead node's loses first).
    for node in ["n1", "n2"] {
        let _: i64 =
            common::raw(&client, redis::cmd("HSET").arg(client.keys().node_claim(node)).arg("instance").arg(node))
                .await;
    }
    assert!(n1.attached_users(T, "grpA").await.unwrap().is_empty());
    n1.set_attached(T, "grpA", "n1", &[ann, ben]).await.unwrap();
    n2.set_attached(T, "grpA", "n2", &[ben, cat]).await.unwrap();
    assert_eq!(n1.attached_users(T, "grpA").await.unwrap(), [ann, ben, cat], "each user once");
    assert!(n1.attached_users(TenantId(8), "grpA").await.unwrap().is_empty(), "tenants apart");
    assert!(n1.attached_users(T, "grpB").await.unwrap().is_empty(), "topics apart");
    // A write replaces the node's set whole; an empty one clears it.
    n1.set_attached(T, "grpA", "n1", &[ann]).await.unwrap();
    assert_eq!(n2.attached_users(T, "grpA").await.unwrap(), [ann, ben, cat]);
    n2.set_attached(T, "grpA", "n2", &[]).await.unwrap();
    assert_eq!(n2.attached_users(T, "grpA").await.unwrap(), [ann]);
    let nodes: Vec<String> =
        common::raw(&client, redis::cmd("SMEMBERS").arg(client.keys().topic_attached_nodes(T, "grpA"))).await;
    assert_eq!(nodes, ["n1"], "an emptied node is no longer listed");

    // n2 attaches again; n1 dies: once its claim is gone its attachments no longer count, and its set expires
    // while n2 keeps heartbeating the topic.
    n2.set_attached(T, "grpA", "n2", &[cat]).await.unwrap();
    assert_eq!(n2.attached_users(T, "grpA").await.unwrap(), [ann, cat]);
    let _: i64 = common::raw(&client, redis::cmd("DEL").arg(client.keys().node_claim("n1"))).await;
    assert_eq!(n2.attached_users(T, "grpA").await.unwrap(), [cat], "a node without a claim is dead");
    n2.join_topics(T, cat, &["grpA".to_owned()]).await.unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        n2.heartbeat(&[], &[(T, "grpA".to_owned())]).await.unwrap();
    }
    assert_eq!(n2.attached_users(T, "grpA").await.unwrap(), [cat], "only the live node's attachments remain");
}
