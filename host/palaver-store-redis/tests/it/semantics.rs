//! Semantics kept under failure: the storage contract suite through the decorators, with a live Redis and
//! with Redis unreachable, and the degradation rules with Redis unreachable (a closed port) or
//! hanging (a listener that never answers): seq refuses as retryable, presence answers unknown, cached reads
//! come from the inner store, and security state fails closed.

use crate as common;
use crate::{group, msg, sub, user};
use palaver_contract::Fixture;
use palaver_core::ports::{
    IdempotencyStore, MessageStore, PresenceStore, SeqAllocator, SubscriptionStore, TopicStore, UserStore,
};
use palaver_core::{MessageQuery, Presence, PresenceMeta, StoreError, TenantId, UserId};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{
    CachedStorage, HotPolicy, RedisClient, RedisConfig, RedisIdempotency, RedisLoginFailures, RedisPresence, RedisSeq,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

const T: TenantId = TenantId(7);

fn unavailable<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    assert!(matches!(r, Err(StoreError::Unavailable(_))), "{what}: expected Unavailable, got {r:?}");
}

#[tokio::test]
async fn redis_native_ports_refuse_or_answer_unknown() {
    let client = common::dead_client("degrade-native");
    let started = Instant::now();
    unavailable(RedisSeq::new(client.clone()).next_seq(T, "grpA", 10).await, "seq: 503, never a seq from the store");
    unavailable(RedisSeq::new(client.clone()).rebaseline(T, "grpA", 10).await, "rebaseline");
    unavailable(RedisIdempotency::new(client.clone()).claim(T, "grpA", UserId(1), "m").await, "claim");
    let presence = RedisPresence::new(client.clone(), "n1");
    assert_eq!(presence.get_presence(T, UserId(1)).await, Presence::Unknown);
    let meta = PresenceMeta { node_id: "n1".into(), device: None, user_agent: None, now: 1 };
    unavailable(presence.mark_online(T, UserId(1), "s", &meta).await, "mark_online");
    unavailable(client.ping().await, "ping");
    assert!(started.elapsed() < Duration::from_secs(10), "a refused connection fails fast");
    let m = client.metrics().snapshot();
    assert_eq!(m.presence_unknown, 1);
    assert!(m.command_failures >= 5, "{m:?}");
}

#[tokio::test]
async fn cached_reads_and_writes_are_served_by_the_inner_store() {
    let client = common::dead_client("degrade-cache");
    let inner = MemoryStore::new();
    let stack = CachedStorage::over(client.clone(), Arc::new(inner.clone()), HotPolicy::Always);
    stack.create_user(T, &user(10), None).await.unwrap();
    stack.create_topic(T, &group("grpD")).await.unwrap();
    stack.upsert_sub(T, &sub("grpD", 10)).await.unwrap();
    assert_eq!(stack.append(T, &msg("grpD", 1, 10)).await.unwrap(), palaver_core::AppendOutcome::Stored);
    assert_eq!(stack.get_user(T, UserId(10)).await.unwrap(), Some(user(10)));
    assert_eq!(stack.get_topic(T, "grpD").await.unwrap().unwrap().seq, 1);
    assert_eq!(stack.get_sub(T, "grpD", UserId(10)).await.unwrap(), Some(sub("grpD", 10)));
    let all = MessageQuery { since: None, before: None, limit: 10 };
    assert_eq!(stack.list_messages(T, "grpD", UserId(10), &all).await.unwrap(), vec![msg("grpD", 1, 10)]);
    let m = client.metrics().snapshot();
    assert_eq!(m.fallbacks, 4, "one per read: {m:?}");
    assert!(m.invalidation_failures >= 3 && m.hot_write_failures == 1, "writes were kept and counted: {m:?}");
}

#[tokio::test]
async fn security_state_fails_closed() {
    use palaver_core::ports::{Backoff, LoginFailureStore};
    let s = RedisLoginFailures::new(common::dead_client("degrade-login-fail"));
    let b = Backoff { limit: 3, first_ms: 1000, max_ms: 4000, forget_ms: 60_000 };
    unavailable(s.blocked_until(T, &["login:alice"], 0).await, "never 'not blocked'");
    unavailable(s.record_failure(T, &[("login:alice", b)], 0).await, "a failure is not silently lost");
    unavailable(s.clear(T, "login:alice").await, "clear");
}

#[tokio::test]
async fn a_hanging_server_times_out_as_unavailable() {
    // The listener accepts into its backlog but never answers, like a Redis stuck behind a partition.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let config = RedisConfig {
        dial_timeout_ms: 200,
        read_timeout_ms: 200,
        write_timeout_ms: 100,
        ..RedisConfig::with_addr(addr.to_string())
    };
    let client = RedisClient::connect(config).unwrap();
    let seq = RedisSeq::new(client.clone());
    for attempt in 0..3 {
        let started = Instant::now();
        unavailable(seq.next_seq(T, "grpA", 0).await, "hung seq");
        assert!(started.elapsed() < Duration::from_secs(2), "attempt {attempt} bounded: {:?}", started.elapsed());
    }
    // Three failures in a row open the circuit: further commands fail at once instead of waiting.
    let started = Instant::now();
    unavailable(seq.next_seq(T, "grpA", 0).await, "seq with the circuit open");
    unavailable(client.ping().await, "ping with the circuit open");
    assert!(started.elapsed() < Duration::from_millis(100), "failed fast: {:?}", started.elapsed());
    drop(listener);
}

#[test]
fn bad_settings_are_refused_at_build() {
    assert!(RedisClient::connect(RedisConfig { key_prefix: String::new(), ..RedisConfig::default() }).is_err());
    assert!(RedisClient::connect(RedisConfig::with_addr("host:notaport")).is_err());
    assert!(RedisClient::connect(RedisConfig { pending_ttl_seconds: 0, ..RedisConfig::default() }).is_err());
}

fn stack(client: RedisClient) -> Fixture<CachedStorage> {
    Fixture::new(CachedStorage::over(client, Arc::new(MemoryStore::new()), HotPolicy::Always))
}

/// A stack on the test Redis under a fresh prefix. Without Redis (and with `PALAVER_SKIP_REDIS=1`, otherwise
/// `live` fails the test) the case still runs, degraded, which is the other suite's setting.
async fn live_stack() -> Fixture<CachedStorage> {
    // A 1 ms invalidation grace lets the cases' reads right after their writes fill and hit the copies, so
    // the cached paths are exercised too, not only the hot ones.
    let config = RedisConfig { cache_invalidation_grace_ms: 1, ..common::config("contract") };
    match common::live(config).await {
        Some(client) => stack(client),
        None => stack(common::dead_client("contract")),
    }
}

async fn degraded_stack() -> Fixture<CachedStorage> {
    stack(common::dead_client("contract-degraded"))
}

mod live {
    palaver_contract::storage_contract_tests!(fixture = super::live_stack());
}

mod degraded {
    palaver_contract::storage_contract_tests!(fixture = super::degraded_stack());
}
