//! The presence port's batch methods against a real Redis: joining and leaving many topics in one call, and
//! the node heartbeat that keeps idle sessions and topic sets alive (and heals a lost nodes set).

use crate as common;
use palaver_core::ports::{PresenceStore, SessionBeat};
use palaver_core::{Presence, PresenceMeta, TenantId, UserId};
use palaver_store_redis::{RedisConfig, RedisPresence};
use std::time::Duration;

const T: TenantId = TenantId(3);

fn topics(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[tokio::test]
async fn joins_and_leaves_many_topics_at_once() {
    let Some(client) = common::client("presence-batch").await else { return };
    let p = RedisPresence::new(client.clone(), "n1");
    let u = UserId(9);
    p.join_topics(T, u, &topics(&["grpA", "grpB", "grpC"])).await.unwrap();
    p.join_topics(T, u, &[]).await.unwrap();
    for t in ["grpA", "grpB", "grpC"] {
        assert_eq!(p.topic_nodes(T, t).await.unwrap(), vec!["n1".to_owned()], "{t}");
        assert_eq!(p.topic_members(T, t).await.unwrap(), vec![u], "{t}");
        assert_eq!(p.topic_node_members(T, t, "n1").await.unwrap(), vec![u], "{t}");
    }
    p.leave_topics(T, u, &topics(&["grpA", "grpB"])).await.unwrap();
    p.leave_topics(T, u, &[]).await.unwrap();
    for t in ["grpA", "grpB"] {
        assert!(p.topic_nodes(T, t).await.unwrap().is_empty(), "{t}");
        assert!(p.topic_members(T, t).await.unwrap().is_empty(), "{t}");
    }
    assert_eq!(p.topic_members(T, "grpC").await.unwrap(), vec![u]);
    // Many topics cross the pipeline chunk size.
    let many: Vec<String> = (0..1200).map(|i| format!("grpM{i}")).collect();
    p.join_topics(T, u, &many).await.unwrap();
    assert_eq!(p.topic_members(T, "grpM1199").await.unwrap(), vec![u]);
    p.leave_topics(T, u, &many).await.unwrap();
    assert!(p.topic_members(T, "grpM0").await.unwrap().is_empty());
    assert!(p.topic_members(T, "grpM1199").await.unwrap().is_empty());
}

#[tokio::test]
async fn the_heartbeat_keeps_idle_sessions_and_topic_sets_alive() {
    let config = RedisConfig { presence_ttl_seconds: 2, ..common::config("presence-beat") };
    let Some(client) = common::live(config).await else { return };
    let p = RedisPresence::new(client.clone(), "n1");
    let (idle, lonely) = (UserId(1), UserId(2));
    let t0 = common::now();
    let meta = PresenceMeta { node_id: "n1".into(), device: None, user_agent: None, now: t0 };
    p.mark_online(T, idle, "s1", &meta).await.unwrap();
    p.mark_online(T, lonely, "s1", &meta).await.unwrap();
    p.join_topics(T, idle, &topics(&["grpBeat", "grpIdle"])).await.unwrap();
    let beats = [SessionBeat { tenant: T, user: idle, session: "s1".into() }];
    let beat_topics = [(T, "grpBeat".to_owned())];
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        p.heartbeat(&beats, &beat_topics).await.unwrap();
    }
    assert_eq!(
        p.get_presence(T, idle).await,
        Presence::Online { sessions: 1, node_id: "n1".into(), last_active: t0 },
        "alive past its TTL, last activity untouched"
    );
    assert_eq!(p.get_presence(T, lonely).await, Presence::Offline { last_seen: None }, "no heartbeat, expired");
    assert_eq!(p.topic_node_members(T, "grpBeat", "n1").await.unwrap(), vec![idle]);
    assert!(p.topic_members(T, "grpIdle").await.unwrap().is_empty(), "a topic left out of the heartbeat expired");
    let keys = client.keys();
    for key in [
        keys.topic_online_members(T, "grpBeat"),
        keys.topic_node_online_members(T, "grpBeat", "n1"),
        keys.topic_online_nodes(T, "grpBeat"),
    ] {
        let ttl: i64 = common::raw(&client, redis::cmd("PTTL").arg(&key)).await;
        assert!(ttl > 0 && ttl <= 2000, "{key}: {ttl}");
    }

    // A lost nodes set comes back with the next heartbeat; a lost member set does not bring it back.
    let _: i64 = common::raw(&client, redis::cmd("DEL").arg(keys.topic_online_nodes(T, "grpBeat"))).await;
    p.heartbeat(&[], &beat_topics).await.unwrap();
    assert_eq!(p.topic_nodes(T, "grpBeat").await.unwrap(), vec!["n1".to_owned()]);
    let _: i64 = common::raw(
        &client,
        redis::cmd("DEL")
            .arg(keys.topic_online_nodes(T, "grpBeat"))
            .arg(keys.topic_node_online_members(T, "grpBeat", "n1")),
    )
    .await;
    p.heartbeat(&[], &beat_topics).await.unwrap();
    let exists: i64 = common::raw(&client, redis::cmd("EXISTS").arg(keys.topic_online_nodes(T, "grpBeat"))).await;
    assert_eq!(exists, 0, "the bus keeps broadcasting rather than routing the topic to an empty node");
}

#[tokio::test]
async fn one_heartbeat_covers_more_sessions_than_one_pipeline() {
    let Some(client) = common::client("presence-beat-many").await else { return };
    let p = RedisPresence::new(client.clone(), "n1");
    let now = common::now();
    let meta = PresenceMeta { node_id: "n1".into(), device: None, user_agent: None, now };
    let mut beats = Vec::new();
    for i in 1..=700 {
        p.mark_online(T, UserId(i), "s", &meta).await.unwrap();
        beats.push(SessionBeat { tenant: T, user: UserId(i), session: "s".into() });
    }
    let before = client.metrics().snapshot().commands;
    p.heartbeat(&beats, &[]).await.unwrap();
    let spent = client.metrics().snapshot().commands - before;
    assert!(spent <= 3, "700 sessions in {spent} pipelines");
    assert!(matches!(p.get_presence(T, UserId(700)).await, Presence::Online { sessions: 1, .. }));
}
