//! Integration tests of the Redis adapters against a real Redis, plus the storage contract suite run through
//! the decorators; this root holds the shared set-up and the modules hold the cases.
//!
//! Tests read `PALAVER_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`). An unreachable Redis fails the test,
//! unless `PALAVER_SKIP_REDIS=1`, in which case the test prints a notice and passes without checking anything.
//! Each test uses a key prefix of its own, so tests can run in parallel on one server and never need a flush;
//! the one test that flushes owns database 9.

#![allow(dead_code)]

mod bus;
mod bus_faults;
mod cache;
mod codes;
mod control;
mod hot;
mod idempotency_contract;
mod keys;
mod login_failures;
mod nodes;
mod presence;
mod presence_batch;
mod semantics;
mod seq;
mod seq_contract;

use palaver_core::{AccessMode, DefaultAccess, User};
use palaver_core::{AuditStatus, Message, RecordState, Subscription, Topic, TopicKind, UnixMillis, UserId};
use palaver_store_redis::{RedisClient, RedisConfig};

/// The Redis the tests use.
pub(crate) fn redis_url() -> String {
    std::env::var("PALAVER_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn skipping() -> bool {
    std::env::var("PALAVER_SKIP_REDIS").is_ok_and(|v| v == "1")
}

/// A key prefix no other test (in this run or a concurrent one) uses.
pub(crate) fn unique_prefix(test: &str) -> String {
    format!("t{}-{test}-{:08x}", std::process::id(), rand::random::<u32>())
}

/// Settings for the test Redis under a fresh prefix, with short timeouts so a fault shows quickly.
pub(crate) fn config(test: &str) -> RedisConfig {
    RedisConfig {
        key_prefix: unique_prefix(test),
        dial_timeout_ms: 1000,
        read_timeout_ms: 1000,
        write_timeout_ms: 1000,
        ..RedisConfig::with_addr(redis_url())
    }
}

/// A client for `config` if Redis answers. Panics if it does not, unless skipping is asked for, in which case
/// it prints why and answers `None` so the test can return.
pub(crate) async fn live(config: RedisConfig) -> Option<RedisClient> {
    let client = RedisClient::connect(config).expect("test config is valid");
    match client.ping().await {
        Ok(()) => Some(client),
        Err(e) if skipping() => {
            eprintln!("NOTICE: Redis at {} unreachable ({e}); skipped because PALAVER_SKIP_REDIS=1", redis_url());
            None
        }
        Err(e) => panic!(
            "Redis at {} is unreachable ({e}): start it with `. scripts/lib/services.sh && start_redis`, \
             or set PALAVER_SKIP_REDIS=1 to skip the Redis tests",
            redis_url()
        ),
    }
}

/// A live client under a fresh prefix.
pub(crate) async fn client(test: &str) -> Option<RedisClient> {
    live(config(test)).await
}

/// A client pointed at a closed port, for the degradation tests: every command fails fast.
pub(crate) fn dead_client(test: &str) -> RedisClient {
    let config = RedisConfig {
        key_prefix: unique_prefix(test),
        dial_timeout_ms: 300,
        read_timeout_ms: 300,
        write_timeout_ms: 300,
        ..RedisConfig::with_addr("127.0.0.1:1")
    };
    RedisClient::connect(config).expect("dead config is valid")
}

/// Runs one raw command on the test server, for checks the adapters do not expose.
pub(crate) async fn raw<T: redis::FromRedisValue>(client: &RedisClient, cmd: &redis::Cmd) -> T {
    client.query(cmd).await.expect("raw redis command")
}

/// The current wall clock in Unix milliseconds.
pub(crate) fn now() -> UnixMillis {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

pub(crate) const T0: UnixMillis = 1_700_000_000_000;

pub(crate) fn group(name: &str) -> Topic {
    Topic {
        name: name.to_owned(),
        kind: TopicKind::Group,
        created: T0,
        updated: T0,
        touched: T0,
        state: RecordState::Active,
        owner: Some(UserId(1)),
        defacs: DefaultAccess::GROUP,
        public: Some(serde_json::json!({ "fn": name })),
        trusted: None,
        tags: Vec::new(),
        seq: 0,
        del_id: 0,
    }
}

pub(crate) fn user(id: u64) -> User {
    User {
        id: UserId(id),
        created: T0,
        updated: T0,
        state: RecordState::Active,
        auth_version: 0,
        defacs: DefaultAccess::USER,
        public: Some(serde_json::json!({ "fn": format!("User {id}") })),
        trusted: None,
        tags: Vec::new(),
        last_seen: None,
        user_agent: None,
    }
}

pub(crate) fn sub(topic: &str, user: u64) -> Subscription {
    Subscription {
        topic: topic.to_owned(),
        user: UserId(user),
        created: T0,
        updated: T0,
        deleted: None,
        want: AccessMode::GROUP_AUTH,
        given: AccessMode::GROUP_AUTH,
        read: 0,
        recv: 0,
        del_id: 0,
        private: None,
    }
}

pub(crate) fn msg(topic: &str, seq: i64, from: u64) -> Message {
    Message {
        topic: topic.to_owned(),
        seq,
        created: T0 + seq * 1000,
        from: UserId(from),
        head: None,
        content: serde_json::json!(format!("message {seq}")),
        client_mid: None,
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}
