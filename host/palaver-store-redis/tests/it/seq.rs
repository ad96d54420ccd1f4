//! The seq allocator and idempotency keys against a real Redis, beyond their contract suites: a counter behind
//! the floor, a flushed Redis (in database 9, the only test that flushes), states, TTL expiry and racing claims.

use crate as common;
use palaver_core::AppendOutcome;
use palaver_core::ports::{IdempotencyStore, MessageStore, SeqAllocator, TopicStore};
use palaver_core::{Claim, TenantId, UserId};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{RedisConfig, RedisIdempotency, RedisSeq};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;

const T: TenantId = TenantId(7);
const U: UserId = UserId(42);

#[tokio::test]
async fn a_counter_behind_the_floor_never_answers_at_or_below_it() {
    // Floors, runs, rebaselining, forgetting and concurrency are the contract suite's (`seq_contract.rs`).
    let Some(client) = common::client("seq-floor").await else { return };
    let seq = RedisSeq::new(client.clone());
    // A counter that fell behind what is stored (an old snapshot restored) never answers at or below the floor.
    let key = client.keys().topic_last_seq(T, "grpB");
    let () = common::raw(&client, redis::cmd("SET").arg(&key).arg(3)).await;
    assert_eq!(seq.next_seq(T, "grpB", 10).await.unwrap(), 11);
    assert_eq!(seq.next_seq(T, "grpB", 10).await.unwrap(), 12);
}

#[tokio::test]
async fn idempotency_keys_walk_through_their_states() {
    let Some(client) = common::client("idem-states").await else { return };
    let s = RedisIdempotency::new(client.clone());
    assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired);
    assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Pending);
    assert_eq!(s.claim(TenantId(8), "grpA", U, "m1").await.unwrap(), Claim::Acquired, "tenants apart");
    assert_eq!(s.claim(T, "grpA", UserId(43), "m1").await.unwrap(), Claim::Acquired, "senders apart");
    s.fail(T, "grpA", U, "m1").await.unwrap();
    assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Acquired, "a failed key is taken over");
    s.complete(T, "grpA", U, "m1", 42).await.unwrap();
    assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Done { seq: 42 });
    s.fail(T, "grpA", U, "m1").await.unwrap();
    assert_eq!(s.claim(T, "grpA", U, "m1").await.unwrap(), Claim::Done { seq: 42 }, "fail keeps a done key");
    s.fail(T, "grpA", U, "never-claimed").await.unwrap();
    assert_eq!(s.claim(T, "grpA", U, "never-claimed").await.unwrap(), Claim::Acquired);

    let key = client.keys().topic_uniq_msg(T, "grpA", U, "m1");
    let raw: String = common::raw(&client, redis::cmd("GET").arg(&key)).await;
    let value: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!((value["status"].as_str(), value["seq"].as_i64()), (Some("done"), Some(42)), "{raw}");
    assert!(value.get("message_id").is_some() && value["created_at"].is_string(), "{raw}");
    let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(&key)).await;
    assert!(ttl > 86_000 && ttl <= 86_400, "done keys live done_ttl_seconds, got {ttl}");
}

#[tokio::test]
async fn idempotency_keys_expire_after_their_ttls() {
    let config = RedisConfig {
        pending_ttl_seconds: 1,
        done_ttl_seconds: 1,
        failed_ttl_seconds: 1,
        ..common::config("idem-ttl")
    };
    let Some(client) = common::live(config).await else { return };
    let s = RedisIdempotency::new(client);
    assert_eq!(s.claim(T, "grpA", U, "p").await.unwrap(), Claim::Acquired);
    s.complete(T, "grpA", U, "d", 7).await.unwrap();
    assert_eq!(s.claim(T, "grpA", U, "f").await.unwrap(), Claim::Acquired);
    s.fail(T, "grpA", U, "f").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    for mid in ["p", "d", "f"] {
        assert_eq!(s.claim(T, "grpA", U, mid).await.unwrap(), Claim::Acquired, "{mid} expired");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_claims_acquire_exactly_once() {
    let Some(client) = common::client("idem-race").await else { return };
    let s = RedisIdempotency::new(client);
    for round in 0..50 {
        let mid = format!("race-{round}");
        let barrier = Arc::new(Barrier::new(2));
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let (s, barrier, mid) = (s.clone(), barrier.clone(), mid.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    s.claim(T, "grpA", U, &mid).await.unwrap()
                })
            })
            .collect();
        let mut claims = Vec::new();
        for task in tasks {
            claims.push(task.await.unwrap());
        }
        let acquired = claims.iter().filter(|c| **c == Claim::Acquired).count();
        assert_eq!(acquired, 1, "round {round}: {claims:?}");
        assert!(claims.contains(&Claim::Pending), "round {round}: the loser sees pending");
    }
}

#[tokio::test]
async fn a_flushed_counter_restarts_from_the_stored_floor() {
    let config = RedisConfig { db: 9, ..common::config("flush") };
    let Some(client) = common::live(config).await else { return };
    let seq = RedisSeq::new(client.clone());
    let store = MemoryStore::new();
    store.create_topic(T, &common::group("grpFlush")).await.unwrap();

    // The service's loop: the floor is the last seq it knows stored, handed to every allocation.
    let mut floor = 0;
    let mut handed = HashSet::new();
    for _ in 0..10 {
        let s = seq.next_seq(T, "grpFlush", floor).await.unwrap();
        assert_eq!(store.append(T, &common::msg("grpFlush", s, 1)).await.unwrap(), AppendOutcome::Stored);
        assert!(handed.insert(s));
        floor = s;
    }
    assert_eq!(floor, 10);

    let () = common::raw(&client, &redis::cmd("FLUSHDB")).await;
    let key = client.keys().topic_last_seq(T, "grpFlush");
    let exists: i64 = common::raw(&client, redis::cmd("EXISTS").arg(&key)).await;
    assert_eq!(exists, 0, "the counter is gone");

    // A node that restarted with the flush knows only the stored maximum; both paths must land above it.
    let after_restart = store.max_seq(T, "grpFlush").await.unwrap();
    assert_eq!(after_restart, 10);
    let s = seq.next_seq(T, "grpFlush", after_restart).await.unwrap();
    assert_eq!(s, 11, "re-initialised from the floor");
    assert!(handed.insert(s), "seq {s} reused");
    assert_eq!(store.append(T, &common::msg("grpFlush", s, 1)).await.unwrap(), AppendOutcome::Stored);
    for _ in 0..5 {
        let s = seq.next_seq(T, "grpFlush", 0).await.unwrap();
        assert!(handed.insert(s), "seq {s} reused");
    }
    assert_eq!(handed.len(), 16);
    assert_eq!(handed.iter().max(), Some(&16));
}
