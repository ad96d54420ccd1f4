//! Contract cases for the task queue: order per key, a group resuming after its commit, an uncommitted record
//! delivered again to the group's next member, groups independent of each other, headers round-tripping, and
//! `buffered` counting only what comes at once.
//! [`crate::queue_contract_tests!`] runs them against any `TaskQueue`.
//!
//! Every case uses consumer groups of its own (a random suffix), so cases sharing a broker do not see each other's
//! commits; an adapter whose topics outlive a case gives each case fresh topic names.

use palaver_core::ports::{Delivery, QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
use std::collections::HashMap;
use std::time::Duration;

/// How long a case waits for a record before failing: generous, for a broker's first group join.
const WAIT: Duration = Duration::from_secs(45);

/// A consumer group name unique to this call.
fn group(name: &str) -> String {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("contract-{name}-{n:x}")
}

fn record(key: &str, payload: &str) -> QueueRecord {
    QueueRecord::new(QueueTopic::Audit, key, payload.as_bytes().to_vec())
}

async fn next(c: &mut Box<dyn QueueConsumer>) -> Delivery {
    match tokio::time::timeout(WAIT, c.next()).await {
        Ok(d) => d.expect("next record"),
        Err(_) => panic!("no record within {WAIT:?}"),
    }
}

fn text(d: &Delivery) -> String {
    String::from_utf8(d.record.payload.clone()).expect("utf-8 payload")
}

/// Records with one key come in produce order, whatever other keys are interleaved.
pub async fn queue_order_per_key<Q: TaskQueue>(q: Q) {
    for i in 0..10 {
        q.produce(record("t1:a", &format!("a{i}"))).await.unwrap();
        q.produce(record("t1:b", &format!("b{i}"))).await.unwrap();
    }
    let mut c = q.subscribe(QueueTopic::Audit, &group("order")).await.unwrap();
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    for _ in 0..20 {
        let d = next(&mut c).await;
        assert_eq!(d.record.topic, QueueTopic::Audit);
        seen.entry(d.record.key.clone()).or_default().push(text(&d));
    }
    let want = |p: &str| (0..10).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
    assert_eq!(seen["t1:a"], want("a"));
    assert_eq!(seen["t1:b"], want("b"));
}

/// A new member of a group starts after the group's last commit.
pub async fn queue_group_resumes_after_commit<Q: TaskQueue>(q: Q) {
    for p in ["r1", "r2", "r3"] {
        q.produce(record("t1:k", p)).await.unwrap();
    }
    let g = group("resume");
    let mut c = q.subscribe(QueueTopic::Audit, &g).await.unwrap();
    assert_eq!(text(&next(&mut c).await), "r1");
    let second = next(&mut c).await;
    assert_eq!(text(&second), "r2");
    c.commit(&second).await.unwrap();
    drop(c);
    let mut c = q.subscribe(QueueTopic::Audit, &g).await.unwrap();
    assert_eq!(text(&next(&mut c).await), "r3", "r1 and r2 were committed");
}

/// A record read but not committed is delivered again to the group's next member.
pub async fn queue_uncommitted_is_redelivered<Q: TaskQueue>(q: Q) {
    for p in ["u1", "u2"] {
        q.produce(record("t1:k", p)).await.unwrap();
    }
    let g = group("redeliver");
    let mut c = q.subscribe(QueueTopic::Audit, &g).await.unwrap();
    let first = next(&mut c).await;
    c.commit(&first).await.unwrap();
    assert_eq!(text(&next(&mut c).await), "u2");
    drop(c); // a crash between the effect and the commit
    let mut c = q.subscribe(QueueTopic::Audit, &g).await.unwrap();
    let again = next(&mut c).await;
    assert_eq!(text(&again), "u2", "the uncommitted record comes back");
    c.commit(&again).await.unwrap();
    q.produce(record("t1:k", "u3")).await.unwrap();
    assert_eq!(text(&next(&mut c).await), "u3");
}

/// One group's commits do not move another's.
pub async fn queue_groups_are_independent<Q: TaskQueue>(q: Q) {
    for p in ["g1", "g2"] {
        q.produce(record("t1:k", p)).await.unwrap();
    }
    let mut a = q.subscribe(QueueTopic::Audit, &group("a")).await.unwrap();
    for want in ["g1", "g2"] {
        let d = next(&mut a).await;
        assert_eq!(text(&d), want);
        a.commit(&d).await.unwrap();
    }
    let mut b = q.subscribe(QueueTopic::Audit, &group("b")).await.unwrap();
    assert_eq!(text(&next(&mut b).await), "g1", "a new group starts at the beginning");
    assert_eq!(text(&next(&mut b).await), "g2");
}

/// Headers (names, values, order, empty values) and binary payloads survive the queue; topics do not mix.
pub async fn queue_headers_round_trip<Q: TaskQueue>(q: Q) {
    let sent = QueueRecord {
        topic: QueueTopic::AdminEvent,
        key: "t7:user:1".to_owned(),
        headers: vec![("tenant".into(), "7".into()), ("kind".into(), "user.state".into()), ("empty".into(), "".into())],
        payload: vec![0, 159, 146, 150, 255],
    };
    q.produce(record("t7:x", "other topic")).await.unwrap();
    q.produce(sent.clone()).await.unwrap();
    let mut c = q.subscribe(QueueTopic::AdminEvent, &group("headers")).await.unwrap();
    let got = next(&mut c).await;
    assert_eq!(got.record, sent);
    assert_eq!(got.record.header("kind"), Some("user.state"));
}

/// A batch arrives whole and in order, after what was produced before it.
pub async fn queue_batch_keeps_order<Q: TaskQueue>(q: Q) {
    q.produce(record("t1:k", "before")).await.unwrap();
    let batch: Vec<QueueRecord> = (0..50).map(|i| record("t1:k", &format!("b{i}"))).collect();
    q.produce_batch(batch).await.unwrap();
    q.produce_batch(Vec::new()).await.unwrap();
    let mut c = q.subscribe(QueueTopic::Audit, &group("batch")).await.unwrap();
    assert_eq!(text(&next(&mut c).await), "before");
    for i in 0..50 {
        assert_eq!(text(&next(&mut c).await), format!("b{i}"));
    }
}

/// `buffered` counts only records `next` returns without waiting: while it is above zero a `next` answers at
/// once, and it is zero once every produced record was taken.
pub async fn queue_buffered_records_come_at_once<Q: TaskQueue>(q: Q) {
    for p in ["b1", "b2", "b3"] {
        q.produce(record("t1:k", p)).await.unwrap();
    }
    let mut c = q.subscribe(QueueTopic::Audit, &group("buffered")).await.unwrap();
    let mut got = vec![text(&next(&mut c).await)];
    while c.buffered() > 0 {
        assert!(c.buffered() <= 3 - got.len(), "more buffered than left: {}", c.buffered());
        let at_once = tokio::time::timeout(Duration::from_millis(200), c.next()).await;
        got.push(text(&at_once.expect("a buffered record comes at once").unwrap()));
    }
    while got.len() < 3 {
        got.push(text(&next(&mut c).await));
    }
    assert_eq!(got, ["b1", "b2", "b3"]);
    assert_eq!(c.buffered(), 0, "nothing left to take");
}
