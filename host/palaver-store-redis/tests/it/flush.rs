//! A Redis that lost its data (here: `FLUSHDB`) must not make the allocator reuse a seq. This is the only test
//! that flushes, and it owns database 9 so that no other test's keys are touched.

use crate::common;
use palaver_core::ports::{MessageStore, SeqAllocator, TopicStore};
use palaver_core::{AppendOutcome, TenantId};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{RedisConfig, RedisSeq};
use std::collections::HashSet;

const T: TenantId = TenantId(7);

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
