//! Hot message copies against a real Redis over the in-memory store: hits, misses, gaps, soft deletions, held
//! messages, recalls and the per-tenant cap. Every answer is compared with the inner store's, and the metrics
//! tell whether Redis or the store produced it.

use crate as common;
use crate::{group, msg};
use palaver_core::ports::{MessageStore, SeqAllocator, TopicStore, nothing_owed};
use palaver_core::{AuditStatus, DeleteMessages, Message, MessageQuery, Seq, SeqRange, TenantId, UserId};
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{CachedStorage, HotPolicy, RedisClient, RedisConfig, RedisSeq};
use std::sync::Arc;

const T: TenantId = TenantId(7);
const TOPIC: &str = "grpHot";

fn q(since: Option<Seq>, before: Option<Seq>, limit: usize) -> MessageQuery {
    MessageQuery { since, before, limit }
}

struct Rig {
    client: RedisClient,
    inner: MemoryStore,
    stack: CachedStorage,
    seq: RedisSeq,
}

impl Rig {
    async fn new(config: RedisConfig) -> Option<Rig> {
        let client = common::live(config).await?;
        let inner = MemoryStore::new();
        let stack = CachedStorage::over(client.clone(), Arc::new(inner.clone()), HotPolicy::Groups);
        stack.create_topic(T, &group(TOPIC)).await.unwrap();
        Some(Rig { seq: RedisSeq::new(client.clone()), client, inner, stack })
    }

    /// Publishes the way the service does: a seq from the allocator, then the append through the stack.
    async fn publish(&self, from: u64, audit: AuditStatus) -> Message {
        let seq = self.seq.next_seq(T, TOPIC, 0).await.unwrap();
        let m = Message { audit, ..msg(TOPIC, seq, from) };
        self.stack.append(T, &m).await.unwrap();
        m
    }

    /// Lists through the stack, checks the answer equals the inner store's, and says whether Redis gave it.
    async fn list(&self, reader: u64, query: MessageQuery) -> (Vec<Seq>, bool) {
        let before = self.client.metrics().snapshot().hot_hits;
        let got = self.stack.list_messages(T, TOPIC, UserId(reader), &query).await.unwrap();
        let hit = self.client.metrics().snapshot().hot_hits > before;
        let truth = self.inner.list_messages(T, TOPIC, UserId(reader), &query).await.unwrap();
        assert_eq!(got, truth, "reader {reader}, {query:?}, hit {hit}");
        (got.iter().map(|m| m.seq).collect(), hit)
    }

    async fn delete(&self, low: Seq, hi: Seq, hard: bool, user: u64) {
        let request = DeleteMessages {
            ranges: vec![SeqRange { low, hi }],
            hard,
            for_user: UserId(user),
            when: common::T0,
            recalled_by: None,
        };
        self.stack.delete_messages(T, TOPIC, &request).await.unwrap();
    }

    async fn raw_copy(&self, seq: Seq) -> Option<String> {
        common::raw(&self.client, redis::cmd("GET").arg(self.client.keys().topic_hot_msg(T, TOPIC, seq))).await
    }
}

#[tokio::test]
async fn whole_windows_are_answered_from_redis() {
    let Some(rig) = Rig::new(common::config("hot-hit")).await else { return };
    for _ in 0..10 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    assert_eq!(rig.list(2, q(None, None, 100)).await, ((1..=10).rev().collect(), true));
    assert_eq!(rig.list(2, q(Some(3), Some(7), 100)).await, (vec![6, 5, 4, 3], true));
    assert_eq!(rig.list(2, q(None, None, 2)).await, (vec![10, 9], true));
    assert_eq!(rig.list(2, q(Some(8), None, 10)).await, (vec![10, 9, 8], true));
    assert_eq!(rig.list(2, q(None, Some(4), 10)).await, (vec![3, 2, 1], true));
    assert_eq!(rig.list(2, q(Some(11), None, 10)).await, (vec![], true));
    assert_eq!(rig.list(2, q(Some(5), Some(5), 10)).await.0, Vec::<Seq>::new());

    let keys = rig.client.keys();
    let seqs: Vec<i64> =
        common::raw(&rig.client, redis::cmd("ZRANGE").arg(keys.topic_hot_msg_seqs(T, TOPIC)).arg(0).arg(-1)).await;
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    let ttl: i64 = common::raw(&rig.client, redis::cmd("TTL").arg(keys.topic_hot_msg(T, TOPIC, 3))).await;
    assert!(ttl > 86_000, "hot copies live hot_message_ttl_seconds, got {ttl}");
    assert!(rig.raw_copy(3).await.unwrap().starts_with("P|1|"));
}

#[tokio::test]
async fn gaps_and_missing_copies_send_the_read_to_the_store() {
    let Some(rig) = Rig::new(common::config("hot-gap")).await else { return };
    for _ in 0..5 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    // Seq 6 is allocated but its append fails (a hole), and seq 7 is stored behind the decorator's back.
    assert_eq!(rig.seq.next_seq(T, TOPIC, 0).await.unwrap(), 6);
    assert_eq!(rig.seq.next_seq(T, TOPIC, 0).await.unwrap(), 7);
    rig.inner.append(T, &msg(TOPIC, 7, 1)).await.unwrap();
    for _ in 0..3 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    assert_eq!(rig.list(2, q(None, None, 100)).await, (vec![10, 9, 8, 7, 5, 4, 3, 2, 1], false));
    assert_eq!(rig.list(2, q(Some(8), None, 100)).await, (vec![10, 9, 8], true), "above the gap");
    assert_eq!(rig.list(2, q(None, None, 3)).await, (vec![10, 9, 8], true), "the limit stops before the gap");
    assert_eq!(rig.list(2, q(None, Some(6), 100)).await, (vec![5, 4, 3, 2, 1], true), "below the gap");

    // An expired (here: dropped) copy is a gap as well.
    let () = common::raw(&rig.client, redis::cmd("DEL").arg(rig.client.keys().topic_hot_msg(T, TOPIC, 9))).await;
    assert!(!rig.list(2, q(None, None, 100)).await.1);
    assert!(rig.list(2, q(Some(10), None, 100)).await.1);
}

#[tokio::test]
async fn a_readers_soft_deletion_is_answered_by_the_store() {
    let Some(rig) = Rig::new(common::config("hot-soft")).await else { return };
    for _ in 0..6 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    rig.delete(2, 4, false, 1).await;
    assert_eq!(rig.list(1, q(None, None, 100)).await, (vec![6, 5, 4, 1], false), "the deleter");
    assert_eq!(rig.list(1, q(Some(4), None, 100)).await, (vec![6, 5, 4], true), "a window above the deletion");
    assert_eq!(rig.list(2, q(None, None, 100)).await, ((1..=6).rev().collect(), true), "another reader");
    // A soft deletion reaching past the last message hides later ones too, and keeps the hot path away.
    rig.delete(7, 100, false, 2).await;
    rig.publish(1, AuditStatus::Pass).await;
    assert_eq!(rig.list(2, q(None, None, 100)).await, ((1..=6).rev().collect(), false));
    assert_eq!(rig.list(3, q(None, None, 100)).await, ((1..=7).rev().collect(), true));
}

#[tokio::test]
async fn held_messages_are_served_to_others_by_the_store_until_passed() {
    let Some(rig) = Rig::new(common::config("hot-held")).await else { return };
    for _ in 0..3 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    rig.publish(1, AuditStatus::Pending).await;
    rig.publish(2, AuditStatus::Pass).await;
    assert_eq!(rig.list(1, q(None, None, 100)).await, (vec![5, 4, 3, 2, 1], true), "the sender sees it");
    assert_eq!(rig.list(2, q(None, None, 100)).await, (vec![5, 3, 2, 1], false), "others do not");
    assert_eq!(rig.list(2, q(Some(5), None, 100)).await, (vec![5], true), "windows without it stay hot");
    rig.stack.set_audit(T, TOPIC, 4, AuditStatus::Pass, &nothing_owed).await.unwrap();
    assert!(rig.raw_copy(4).await.unwrap().starts_with("P|1|"), "the copy follows moderation");
    assert_eq!(rig.list(2, q(None, None, 100)).await, (vec![5, 4, 3, 2, 1], true));
    rig.stack.set_audit(T, TOPIC, 2, AuditStatus::Reject, &nothing_owed).await.unwrap();
    assert_eq!(rig.list(2, q(None, None, 100)).await, (vec![5, 4, 3, 1], false));
}

#[tokio::test]
async fn recalled_messages_leave_tombstones_not_gaps() {
    let Some(rig) = Rig::new(common::config("hot-recall")).await else { return };
    for _ in 0..6 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    rig.delete(3, 5, true, 1).await;
    assert_eq!(rig.raw_copy(3).await.as_deref(), Some("~"), "the recalled body is gone from Redis");
    assert_eq!(rig.list(2, q(None, None, 100)).await, (vec![6, 5, 2, 1], true));
    assert_eq!(rig.list(2, q(None, None, 2)).await, (vec![6, 5], true));
    assert_eq!(rig.list(2, q(None, Some(5), 2)).await, (vec![2, 1], true), "the walk steps over tombstones");
    // A recall reaching past the last seq covers messages stored later, as the store's log does.
    rig.delete(8, 10, true, 1).await;
    for _ in 0..4 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    assert_eq!(rig.raw_copy(8).await.as_deref(), Some("~"));
    assert_eq!(rig.list(2, q(Some(6), None, 100)).await, (vec![10, 7, 6], true));
}

#[tokio::test]
async fn the_tenant_cap_evicts_the_oldest_copies() {
    let config =
        RedisConfig { hot_max_messages_per_tenant: 5, hot_message_max_bytes: 400, ..common::config("hot-cap") };
    let Some(rig) = Rig::new(config).await else { return };
    for _ in 0..8 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    let index: i64 = common::raw(&rig.client, redis::cmd("ZCARD").arg(rig.client.keys().hot_msg_index(T))).await;
    assert_eq!(index, 5);
    assert_eq!(rig.raw_copy(3).await, None, "evicted");
    assert!(rig.raw_copy(4).await.is_some());
    assert!(!rig.list(2, q(None, None, 100)).await.1);
    assert!(rig.list(2, q(Some(4), None, 100)).await.1);

    // A body above hot_message_max_bytes is not copied, which the reader sees as a gap.
    let seq = rig.seq.next_seq(T, TOPIC, 0).await.unwrap();
    let big = palaver_core::Message { content: serde_json::json!("x".repeat(1000)), ..msg(TOPIC, seq, 1) };
    rig.stack.append(T, &big).await.unwrap();
    assert_eq!(rig.raw_copy(seq).await, None);
    assert!(!rig.list(2, q(Some(4), None, 100)).await.1);
}

#[tokio::test]
async fn deleting_the_topic_drops_its_copies() {
    let Some(rig) = Rig::new(common::config("hot-drop")).await else { return };
    for _ in 0..3 {
        rig.publish(1, AuditStatus::Pass).await;
    }
    rig.stack.delete_topic(T, TOPIC).await.unwrap();
    let keys = rig.client.keys();
    let exists: i64 = common::raw(
        &rig.client,
        redis::cmd("EXISTS").arg(keys.topic_hot_msg_seqs(T, TOPIC)).arg(keys.topic_hot_msg(T, TOPIC, 2)),
    )
    .await;
    assert_eq!(exists, 0);
    assert!(rig.stack.list_messages(T, TOPIC, UserId(2), &q(None, None, 10)).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_appends_copy_in_batches_and_this_node_reads_its_own_writes_meanwhile() {
    let Some(rig) = Rig::new(common::config("hot-batched")).await else { return };
    let first = rig.seq.next_seqs(T, TOPIC, 0, 200).await.unwrap();
    let messages: Vec<Message> = (first..first + 200).map(|seq| msg(TOPIC, seq, 1)).collect();
    let commands_before = rig.client.metrics().snapshot().commands;
    let mut pending = Vec::new();
    for m in &messages {
        pending.push(rig.stack.queue_append(T, m).await.unwrap());
    }
    // Settled all at once, as a busy node's appends do: their copies queue together.
    let outcomes = futures_util::future::join_all(pending).await;
    assert!(outcomes.into_iter().all(|o| o.unwrap() == palaver_core::AppendOutcome::Stored));
    // Right after the outcomes, whatever the copies' progress, this node sees every message and the topic's seq.
    let (seqs, _) = rig.list(1, q(None, None, 500)).await;
    assert_eq!(seqs.len(), 200);
    assert_eq!(rig.stack.get_topic(T, TOPIC).await.unwrap().unwrap().seq, first + 199);
    // Every copy lands, and then the window is answered from Redis.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while rig.raw_copy(first + 199).await.is_none() || rig.raw_copy(first).await.is_none() {
        assert!(std::time::Instant::now() < deadline, "the copies never landed");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (seqs, hit) = rig.list(1, q(None, None, 500)).await;
    assert_eq!((seqs.len(), hit), (200, true));
    // 200 copies took a few pipelines, not 200 calls (the reads above and the polling add a few more).
    let commands = rig.client.metrics().snapshot().commands - commands_before;
    assert!(commands < 100, "{commands} Redis calls for 200 queued appends and the reads");
}
