//! The batch writer: concurrent appenders all land with distinct seqs, a raced idempotency key stores one row, and
//! a batch mixing every kind of outcome answers each caller as if its append had run alone.

mod common;

use common::Scratch;
use palaver_contract::bare_topic as topic;
use palaver_core::ports::{MessageStore, TenantStore, TopicStore};
use palaver_core::{AppendOutcome, AuditStatus, Message, MessageQuery, StoreError, TopicKind, UserId, p2p_name};
use palaver_store_mysql::MysqlConfig;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

fn message(topic: &str, seq: i64, from: u64, mid: Option<&str>) -> Message {
    Message {
        topic: topic.to_owned(),
        seq,
        created: 1_700_000_000_000 + seq,
        from: UserId(from),
        head: None,
        content: json!({ "txt": format!("m{seq}") }),
        client_mid: mid.map(str::to_owned),
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}

const ALL: MessageQuery = MessageQuery { since: None, before: None, limit: 10_000 };

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_appenders_are_all_stored_with_distinct_seqs() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store_with(MysqlConfig { batch_max_delay: Duration::from_millis(5), ..scratch.config() }).await;
    let t = store.create_tenant("acme", "Acme").await.unwrap().id;
    store.create_topic(t, &topic("grpBusy", TopicKind::Group)).await.unwrap();
    let next = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let (store, next) = (store.clone(), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                let seq = next.fetch_add(1, Ordering::SeqCst) + 1;
                let mid = format!("t{task}-{i}");
                let outcome = store.append(t, &message("grpBusy", seq, task + 1, Some(&mid))).await;
                assert_eq!(outcome, Ok(AppendOutcome::Stored), "task {task}, seq {seq}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let seqs: Vec<i64> =
        store.list_messages(t, "grpBusy", UserId(1), &ALL).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=400).rev().collect::<Vec<_>>(), "every seq stored once");
    assert_eq!(store.get_topic(t, "grpBusy").await.unwrap().unwrap().seq, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_mid_raced_from_two_tasks_is_stored_once() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store_with(MysqlConfig { batch_max_delay: Duration::from_millis(3), ..scratch.config() }).await;
    let t = store.create_tenant("acme", "Acme").await.unwrap().id;
    store.create_topic(t, &topic("grpRace", TopicKind::Group)).await.unwrap();
    for round in 0..20i64 {
        let mid = format!("race-{round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let racers: Vec<_> = [2 * round + 1, 2 * round + 2]
            .into_iter()
            .map(|seq| {
                let (store, barrier, mid) = (store.clone(), Arc::clone(&barrier), mid.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    (seq, store.append(t, &message("grpRace", seq, 9, Some(&mid))).await.unwrap())
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for racer in racers {
            outcomes.push(racer.await.unwrap());
        }
        let stored: Vec<i64> =
            outcomes.iter().filter(|(_, o)| *o == AppendOutcome::Stored).map(|(seq, _)| *seq).collect();
        assert_eq!(stored.len(), 1, "round {round}: exactly one stored: {outcomes:?}");
        let dup = outcomes.iter().find(|(_, o)| *o != AppendOutcome::Stored).map(|(_, o)| *o);
        assert_eq!(dup, Some(AppendOutcome::Duplicate { seq: stored[0] }), "round {round}: the other names it");
        assert_eq!(store.find_by_client_mid(t, "grpRace", UserId(9), &mid).await.unwrap(), Some(stored[0]));
    }
    let mut conn = scratch.connect("t_acme").await;
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM im_group_messages").fetch_one(&mut conn).await.unwrap();
    assert_eq!(rows, 20, "one row per key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_batch_answers_each_caller_on_its_own() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    // A long window, so that every append below lands in the same batch.
    let config = MysqlConfig { batch_max_delay: Duration::from_millis(1500), ..scratch.config() };
    let store = scratch.store_with(config).await;
    let t = store.create_tenant("acme", "Acme").await.unwrap().id;
    let p2p = p2p_name(UserId(1), UserId(2));
    store.create_topic(t, &topic("grpMixed", TopicKind::Group)).await.unwrap();
    store.create_topic(t, &topic(&p2p, TopicKind::P2p)).await.unwrap();
    assert_eq!(store.append(t, &message("grpMixed", 1, 1, Some("old"))).await, Ok(AppendOutcome::Stored));

    let requests = [
        message("grpMixed", 2, 1, Some("new")),
        message("grpMixed", 3, 1, Some("old")),
        message("grpMixed", 2, 2, Some("other")),
        message("grpMissing", 1, 1, None),
        message("grpMixed", 4, 3, Some("twice")),
        message("grpMixed", 5, 3, Some("twice")),
        message(&p2p, 1, 1, Some("new")),
    ];
    let mut calls = Vec::new();
    for msg in requests {
        let store = store.clone();
        calls.push(tokio::spawn(async move { store.append(t, &msg).await }));
        // Keeps arrival order equal to the order above; the window is far longer than these gaps.
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await.unwrap());
    }
    // Each pair below could be taken in either order, if a spawned task started late; either way exactly one of
    // the pair is stored and the other gets the answer a sequential append would have had.
    let stored = |o: &Result<AppendOutcome, StoreError>| *o == Ok(AppendOutcome::Stored);
    let (seq_a, seq_c) = (&outcomes[0], &outcomes[2]);
    assert!(stored(seq_a) != stored(seq_c), "one of the two seq-2 appends is stored: {seq_a:?} {seq_c:?}");
    assert!([seq_a, seq_c].iter().any(|o| matches!(o, Err(StoreError::Conflict(_)))), "the other is a conflict");
    assert_eq!(outcomes[1], Ok(AppendOutcome::Duplicate { seq: 1 }), "key stored before the batch");
    assert_eq!(outcomes[3], Err(StoreError::NotFound), "missing topic");
    let twice = if stored(&outcomes[4]) { 4 } else { 5 };
    let other = if twice == 4 { &outcomes[5] } else { &outcomes[4] };
    assert_eq!(*other, Ok(AppendOutcome::Duplicate { seq: twice }), "key stored earlier in the same batch");
    assert_eq!(outcomes[6], Ok(AppendOutcome::Stored), "P2P row of the same batch");

    let seqs: Vec<i64> =
        store.list_messages(t, "grpMixed", UserId(1), &ALL).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, vec![twice, 2, 1]);
    let group = store.get_topic(t, "grpMixed").await.unwrap().unwrap();
    assert_eq!((group.seq, group.touched), (twice, 1_700_000_000_000 + twice), "raised by stored rows only");
    assert_eq!(store.get_topic(t, &p2p).await.unwrap().unwrap().seq, 1);
}
