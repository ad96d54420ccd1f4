//! Contract cases for appending and reading history: seq bookkeeping, idempotency, conflicts and query windows.

use super::{assert_conflict, assert_not_found};
use crate::data::{group, held_msg, msg, msg_mid, p2p};
use crate::{Fixture, Storage};
use palaver_core::ports::nothing_owed;
use palaver_core::{AppendOutcome, AuditStatus, Message, MessageQuery, Seq, TenantId, UserId};

const TOPIC: &str = "grpContract1";

fn query(since: Option<Seq>, before: Option<Seq>, limit: usize) -> MessageQuery {
    MessageQuery { since, before, limit }
}

/// Seqs of the messages `reader` sees in `topic` through `q`, in the order returned.
pub(crate) async fn seqs<S: Storage>(s: &S, t: TenantId, topic: &str, reader: u64, q: MessageQuery) -> Vec<Seq> {
    let listed = s.list_messages(t, topic, UserId(reader), &q).await.unwrap();
    listed.into_iter().map(|m| m.seq).collect()
}

/// Appended messages read back unchanged, and the topic's seq and touched time follow them.
pub async fn append_stores_and_raises_topic_seq<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 0);
    let (m1, m2) = (msg_mid(TOPIC, 1, 1, "a"), msg(TOPIC, 2, 2));
    assert_eq!(s.append(t, &m1).await.unwrap(), AppendOutcome::Stored);
    let topic = s.get_topic(t, TOPIC).await.unwrap().unwrap();
    assert_eq!((topic.seq, topic.touched), (1, m1.created));
    assert_eq!(s.append(t, &m2).await.unwrap(), AppendOutcome::Stored);
    let topic = s.get_topic(t, TOPIC).await.unwrap().unwrap();
    assert_eq!((topic.seq, topic.touched), (2, m2.created));
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 2);
    let listed = s.list_messages(t, TOPIC, UserId(3), &query(None, None, 10)).await.unwrap();
    assert_eq!(listed, vec![m2, m1], "newest first, every field kept");
}

/// A repeated (topic, sender, client_mid) stores nothing and names the first copy's seq.
pub async fn append_duplicate_client_mid<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    assert_eq!(s.append(t, &msg_mid(TOPIC, 1, 1, "m1")).await.unwrap(), AppendOutcome::Stored);
    assert_eq!(s.append(t, &msg_mid(TOPIC, 2, 1, "m1")).await.unwrap(), AppendOutcome::Duplicate { seq: 1 });
    assert_eq!(s.append(t, &msg_mid(TOPIC, 1, 1, "m1")).await.unwrap(), AppendOutcome::Duplicate { seq: 1 });
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 10)).await, vec![1], "nothing new stored");
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 1);
    assert_eq!(s.get_topic(t, TOPIC).await.unwrap().unwrap().seq, 1);
    assert_eq!(s.find_by_client_mid(t, TOPIC, UserId(1), "m1").await.unwrap(), Some(1));
    assert_eq!(s.find_by_client_mid(t, TOPIC, UserId(1), "m2").await.unwrap(), None);
    assert_eq!(s.find_by_client_mid(t, TOPIC, UserId(2), "m1").await.unwrap(), None);

    assert_eq!(s.append(t, &msg_mid(TOPIC, 2, 2, "m1")).await.unwrap(), AppendOutcome::Stored, "other sender");
    assert_eq!(s.append(t, &msg(TOPIC, 3, 1)).await.unwrap(), AppendOutcome::Stored, "no key, no check");
    assert_eq!(s.append(t, &msg(TOPIC, 4, 1)).await.unwrap(), AppendOutcome::Stored);
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 10)).await, vec![4, 3, 2, 1]);
}

/// Storing a seq twice is a conflict, whatever the rest of the message says.
pub async fn append_same_seq_conflicts<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    s.append(t, &msg(TOPIC, 1, 1)).await.unwrap();
    assert_conflict(s.append(t, &msg(TOPIC, 1, 1)).await, "same seq");
    assert_conflict(s.append(t, &msg_mid(TOPIC, 1, 2, "fresh")).await, "same seq, other sender and key");
    assert_eq!(s.find_by_client_mid(t, TOPIC, UserId(2), "fresh").await.unwrap(), None, "refused append left no key");
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 10)).await, vec![1]);
    assert_eq!(s.append(t, &msg_mid(TOPIC, 2, 2, "fresh")).await.unwrap(), AppendOutcome::Stored);
}

/// History needs a stored topic, the row whose seq it keeps current.
pub async fn append_to_missing_topic_is_not_found<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert_not_found(s.append(t, &msg("grpMissing", 1, 1)).await, "append to a missing topic");
    assert_eq!(s.max_seq(t, "grpMissing").await.unwrap(), 0);
}

/// Group and P2P topics both store history, each with its own seqs.
pub async fn group_and_p2p_histories_are_separate<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let p = p2p(1, 2);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    s.create_topic(t, &p).await.unwrap();
    for seq in 1..=3 {
        assert_eq!(s.append(t, &msg_mid(TOPIC, seq, 1, &format!("g{seq}"))).await.unwrap(), AppendOutcome::Stored);
    }
    for seq in 1..=2 {
        assert_eq!(s.append(t, &msg_mid(&p.name, seq, 1, &format!("g{seq}"))).await.unwrap(), AppendOutcome::Stored);
    }
    assert_eq!(seqs(s, t, TOPIC, 2, query(None, None, 10)).await, vec![3, 2, 1]);
    assert_eq!(seqs(s, t, &p.name, 2, query(None, None, 10)).await, vec![2, 1]);
    let listed = s.list_messages(t, &p.name, UserId(2), &query(None, None, 10)).await.unwrap();
    assert!(listed.iter().all(|m| m.topic == p.name));
    assert_eq!((s.max_seq(t, TOPIC).await.unwrap(), s.max_seq(t, &p.name).await.unwrap()), (3, 2));
    assert_eq!(s.get_topic(t, &p.name).await.unwrap().unwrap().seq, 2);
    assert_eq!(s.find_by_client_mid(t, &p.name, UserId(1), "g2").await.unwrap(), Some(2));
    assert_eq!(s.find_by_client_mid(t, &p.name, UserId(1), "g3").await.unwrap(), None);
    assert_conflict(s.append(t, &msg(&p.name, 2, 2)).await, "P2P seqs are unique too");
    let dup = s.append(t, &msg_mid(&p.name, 3, 1, "g1")).await.unwrap();
    assert_eq!(dup, AppendOutcome::Duplicate { seq: 1 }, "P2P keys are unique too");
}

/// `since` is inclusive, `before` exclusive, newest first, at most `limit`.
pub async fn list_messages_window<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    for seq in 1..=10 {
        s.append(t, &msg(TOPIC, seq, 1 + seq as u64 % 2)).await.unwrap();
    }
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 100)).await, (1..=10).rev().collect::<Vec<_>>());
    assert_eq!(seqs(s, t, TOPIC, 1, query(Some(3), Some(7), 100)).await, vec![6, 5, 4, 3]);
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 2)).await, vec![10, 9]);
    assert_eq!(seqs(s, t, TOPIC, 1, query(Some(8), None, 10)).await, vec![10, 9, 8]);
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, Some(4), 10)).await, vec![3, 2, 1]);
    assert_eq!(seqs(s, t, TOPIC, 1, query(Some(2), Some(9), 3)).await, vec![8, 7, 6]);
    assert!(seqs(s, t, TOPIC, 1, query(None, Some(1), 10)).await.is_empty());
    assert!(seqs(s, t, TOPIC, 1, query(Some(11), None, 10)).await.is_empty());
    assert!(seqs(s, t, TOPIC, 1, query(Some(5), Some(5), 10)).await.is_empty());
    assert!(seqs(s, t, "grpContract2", 1, query(None, None, 10)).await.is_empty(), "unknown topic");
}

/// A message moderation has not passed is listed, flags and all, to its sender only, until it is passed.
pub async fn held_messages_are_visible_to_their_sender_only<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let p = p2p(1, 2);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    s.create_topic(t, &p).await.unwrap();
    let all = query(None, None, 10);
    // Both history tables are covered, since each adapter may filter them with its own statement.
    for topic in [TOPIC, p.name.as_str()] {
        let passed = msg(topic, 1, 2);
        let pending = held_msg(topic, 2, 1, AuditStatus::Pending, &["spam", "link"]);
        let rejected = held_msg(topic, 3, 1, AuditStatus::Reject, &["abuse"]);
        for m in [&passed, &pending, &rejected] {
            assert_eq!(s.append(t, m).await.unwrap(), AppendOutcome::Stored);
        }
        let by_sender = s.list_messages(t, topic, UserId(1), &all).await.unwrap();
        assert_eq!(by_sender, vec![rejected.clone(), pending.clone(), passed.clone()], "{topic}: sender sees all");
        assert_eq!(seqs(s, t, topic, 2, all).await, vec![1], "{topic}: others see passed messages only");
        assert_eq!(s.get_topic(t, topic).await.unwrap().unwrap().seq, 3, "{topic}: held messages still take seqs");

        let released = s.set_audit(t, topic, 2, AuditStatus::Pass, &nothing_owed).await.unwrap();
        let expected = Message { audit: AuditStatus::Pass, ..pending };
        assert_eq!(released, expected, "{topic}: set_audit returns the message, flags kept");
        assert_eq!(seqs(s, t, topic, 1, all).await, vec![3, 2, 1], "{topic}: sender");
        assert_eq!(seqs(s, t, topic, 2, all).await, vec![2, 1], "{topic}: another reader");
        let by_other = s.list_messages(t, topic, UserId(2), &all).await.unwrap();
        assert_eq!(by_other, vec![expected, passed.clone()], "{topic}: released message read back whole");

        let held_again = s.set_audit(t, topic, 1, AuditStatus::Pending, &nothing_owed).await.unwrap();
        assert_eq!(held_again, Message { audit: AuditStatus::Pending, ..passed }, "{topic}: holding works too");
        assert_eq!(seqs(s, t, topic, 2, all).await, vec![2, 1], "{topic}: its sender still sees it");
        assert_eq!(seqs(s, t, topic, 1, all).await, vec![3, 2], "{topic}: others no longer do");

        assert_not_found(
            s.set_audit(t, topic, 99, AuditStatus::Pass, &nothing_owed).await,
            "set_audit on a missing seq",
        );
    }
    assert_not_found(
        s.set_audit(t, "grpMissing", 1, AuditStatus::Pass, &nothing_owed).await,
        "set_audit on a missing topic",
    );
    assert_not_found(
        s.set_audit(fx.other_tenant, TOPIC, 2, AuditStatus::Pass, &nothing_owed).await,
        "set_audit in another tenant",
    );
}

/// Appends of distinct seqs from eight concurrent tasks are all stored.
pub async fn concurrent_appends_all_stored<S: Storage>(fx: Fixture<S>) {
    let t = fx.tenant;
    fx.store.create_topic(t, &group(TOPIC)).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..8i64 {
        let s = fx.store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10i64 {
                let seq = 1 + i * 8 + task;
                let m = msg_mid(TOPIC, seq, 1 + task as u64, &format!("t{task}-{i}"));
                assert_eq!(s.append(t, &m).await.unwrap(), AppendOutcome::Stored, "seq {seq}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let s = &fx.store;
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 1000)).await, (1..=80).rev().collect::<Vec<_>>());
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 80);
    assert_eq!(s.get_topic(t, TOPIC).await.unwrap().unwrap().seq, 80);
}

/// Queued appends answer like appends once awaited, whenever that is: several queued before any is awaited are
/// all stored in order, a queued repeat of an idempotency key names the first copy, and a queued seq already
/// stored is a conflict.
pub async fn queued_appends_answer_once_awaited<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    let mut pending = Vec::new();
    for seq in 1..=20 {
        pending.push(s.queue_append(t, &msg_mid(TOPIC, seq, 1, &format!("q{seq}"))).await.unwrap());
    }
    let repeat = s.queue_append(t, &msg_mid(TOPIC, 21, 1, "q3")).await.unwrap();
    let taken = s.queue_append(t, &msg(TOPIC, 5, 2)).await.unwrap();
    for (i, p) in pending.into_iter().enumerate() {
        assert_eq!(p.await.unwrap(), AppendOutcome::Stored, "seq {}", i + 1);
    }
    assert_eq!(repeat.await.unwrap(), AppendOutcome::Duplicate { seq: 3 });
    assert_conflict(taken.await, "a queued seq already stored");
    assert_eq!(seqs(s, t, TOPIC, 1, query(None, None, 100)).await, (1..=20).rev().collect::<Vec<_>>());
    assert_eq!(s.get_topic(t, TOPIC).await.unwrap().unwrap().seq, 20);
    // A store may refuse it when queued or when it commits.
    let missing = match s.queue_append(t, &msg("grpMissing", 1, 1)).await {
        Ok(pending) => pending.await,
        Err(e) => Err(e),
    };
    assert_not_found(missing, "queued to a missing topic");
}
