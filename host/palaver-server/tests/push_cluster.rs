//! Two push workers, as two nodes run them, each with its own connection to one Redis: the same push task
//! delivered to both (two consumer groups read the same records, which is what a rebalance or a redelivery
//! after a crash does within one group) pushes each device once, because both claim the one dedup key
//! `{prefix}:{tenant}:push:dedup:{topic}:{seq}:{uid}`. Needs Redis (`PALAVER_TEST_REDIS_ADDR`, default
//! 127.0.0.1:6379); the test's keys live under a prefix of its own and are removed at the end.

mod common;

use common::webhook::{Hook, SECRET, login};
use palaver_core::ports::PushDedup;
use palaver_service::backbone::push::worker::{PushWorker, WorkerConfig};
use palaver_store_redis::{RedisClient, RedisConfig, RedisPushDedup};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn redis_addr() -> String {
    std::env::var("PALAVER_TEST_REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_sharing_redis_push_once() {
    // Every worker pushes through the node's provider, `own`: the node's own worker with its in-process dedup,
    // the two "other nodes'" workers with the one Redis dedup, so `own` gets each push twice (once from the
    // node's worker, once from whichever Redis worker claimed it first), never three times.
    let own = Hook::default();
    let own_url = own.start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("PALAVER_PUSH__ENABLED", "true"),
        ("PALAVER_PUSH__RETRY_BACKOFF_MS", "10"),
        ("PALAVER_PUSH__WEBHOOK__URL", own_url.as_str()),
        ("PALAVER_PUSH__WEBHOOK__SECRET", SECRET),
        ("PALAVER_OUTBOX__RELAY_INTERVAL_MS", "50"),
    ];
    let node = common::start(dir.path(), &env).await;
    let prefix = format!("pushtwo{}", std::process::id());
    let mut workers = Vec::new();
    for i in 0..2 {
        let cfg = RedisConfig { addr: redis_addr(), key_prefix: prefix.clone(), ..RedisConfig::default() };
        let dedup: Arc<dyn PushDedup> = Arc::new(RedisPushDedup::new(RedisClient::connect(cfg).unwrap()));
        let cfg = WorkerConfig {
            group: format!("{prefix}.node{i}"),
            max_attempts: 3,
            backoff_initial: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
        };
        workers.push(PushWorker::new(node.service().clone(), node.queue(), dedup, cfg).spawn());
    }

    let addr = node.addr();
    let (mut alice, _) = login(addr, "two-alice", None, true).await;
    let (bob, bob_id) = login(addr, "two-bob", Some("bob-phone"), true).await;
    drop(bob);
    assert_eq!(alice.req("sub", json!({ "topic": bob_id })).await["code"], 200);
    for (n, text) in [(1, "one"), (2, "two")] {
        assert_eq!(alice.req("pub", json!({ "topic": bob_id, "content": text })).await["code"], 202);
        let got = own.expect_msgs("bob-phone", 2 * n).await;
        assert_eq!(got[2 * n - 1]["data"]["seq"], n.to_string(), "{got:?}");
    }
    for w in &workers {
        w.abort();
    }
    let keys = common::drop_redis_keys(&redis_addr(), &prefix).await;
    // One dedup key per push claimed: the two messages and the silent push of Bob's new P2P subscription.
    assert_eq!(own.to("bob-phone").len(), 6, "{:?}", own.to("bob-phone"));
    assert_eq!(keys, 3, "one dedup key per (topic, seq, user)");
    node.shutdown().await;
}
