//! SQLite-specific checks beyond the shared contract: pragmas, reopening, table routing and delete stubs.

use palaver_contract::Fixture;
use palaver_contract::bare_topic as topic;
use palaver_core::ports::{MessageStore, TopicStore, UserStore, nothing_owed};
use palaver_core::{
    AccessMode, AuditStatus, DefaultAccess, DeleteMessages, Message, RecordState, SeqRange, TenantId, TopicKind, User,
    UserId, p2p_name,
};
use palaver_store_sqlite::SqliteStore;
use serde_json::json;

const T: TenantId = TenantId::DEFAULT;

fn message(topic: &str, seq: i64) -> Message {
    Message {
        topic: topic.to_owned(),
        seq,
        created: 10 + seq,
        from: UserId(u64::MAX),
        head: None,
        content: json!({ "txt": format!("m{seq}") }),
        client_mid: Some(format!("mid{seq}")),
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
    }
}

#[tokio::test]
async fn file_database_uses_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("p.db")).await.unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(store.pool()).await.unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys").fetch_one(store.pool()).await.unwrap();
    assert_eq!(fk, 1);
    let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(store.pool()).await.unwrap();
    assert_eq!(sync, 1, "NORMAL");
}

#[tokio::test]
async fn reopening_keeps_data_and_skips_applied_migrations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.db");
    let user = User {
        id: UserId(u64::MAX - 3),
        created: 5,
        updated: 5,
        state: RecordState::Active,
        auth_version: 0,
        defacs: DefaultAccess { auth: AccessMode::USER_AUTH, anon: AccessMode::NONE },
        public: Some(json!({ "fn": "Zoë" })),
        trusted: None,
        tags: vec!["x".into()],
        last_seen: None,
        user_agent: None,
    };
    let store = SqliteStore::open(&path).await.unwrap();
    store.create_user(T, &user, None).await.unwrap();
    store.close().await;
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.get_user(T, user.id).await.unwrap(), Some(user));
}

#[tokio::test]
async fn messages_go_to_their_kind_of_table_and_hard_deletes_leave_stubs() {
    let store = SqliteStore::open_in_memory().await.unwrap();
    let p2p = p2p_name(UserId(1), UserId(2));
    store.create_topic(T, &topic("grpRouting", TopicKind::Group)).await.unwrap();
    store.create_topic(T, &topic(&p2p, TopicKind::P2p)).await.unwrap();
    for seq in 1..=3 {
        store.append(T, &message("grpRouting", seq)).await.unwrap();
    }
    store.append(T, &message(&p2p, 1)).await.unwrap();
    let count = |sql: &'static str| {
        let pool = store.pool().clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.unwrap() }
    };
    assert_eq!(count("SELECT COUNT(*) FROM im_group_messages").await, 3);
    assert_eq!(count("SELECT COUNT(*) FROM im_messages").await, 1);

    // A hard delete of one seq at `when`, by an admin (`None`) or recalled by its sender.
    let hard = |low: i64, when: i64, recalled_by: Option<UserId>| {
        let ranges = vec![SeqRange { low, hi: low + 1 }];
        DeleteMessages { ranges, hard: true, for_user: UserId(1), when, recalled_by }
    };
    store.delete_messages(T, "grpRouting", &hard(2, 99, None)).await.unwrap();
    let stubs = "SELECT COUNT(*) FROM im_group_messages WHERE content IS NULL AND head IS NULL \
                 AND deleted_at = 99 AND status = 'deleted'";
    assert_eq!(count(stubs).await, 1);
    assert_eq!(count("SELECT COUNT(*) FROM dellog WHERE deleted_for = 0").await, 1);
    assert_eq!(store.find_by_client_mid(T, "grpRouting", UserId(u64::MAX), "mid2").await.unwrap(), Some(2));

    // A sender's recall: stored as recalled, by whom and when, its version bumped.
    store.delete_messages(T, "grpRouting", &hard(3, 120, Some(UserId(7)))).await.unwrap();
    let row: (String, Option<i64>, Option<i64>, i64) =
        sqlx::query_as("SELECT status, recalled_by, recalled_at, version FROM im_group_messages WHERE seqid = 3")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(row, ("recalled".into(), Some(7), Some(120), 2));
    let deleted: (String, Option<i64>, i64) =
        sqlx::query_as("SELECT status, recalled_by, version FROM im_group_messages WHERE seqid = 2")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(deleted, ("deleted".into(), None, 2));
}

#[tokio::test]
async fn audit_columns_follow_the_message() {
    let store = SqliteStore::open_in_memory().await.unwrap();
    store.create_topic(T, &topic("grpAudit", TopicKind::Group)).await.unwrap();
    let flagged = Message {
        audit: AuditStatus::Pending,
        risk_flags: vec!["spam".into(), "link".into()],
        ..message("grpAudit", 1)
    };
    store.append(T, &flagged).await.unwrap();
    store.append(T, &message("grpAudit", 2)).await.unwrap();
    let row = |seq: i64| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_as::<_, (String, i64, Option<String>, i64)>(
                "SELECT audit_status, has_risk, risk_flags, updated_at FROM im_group_messages WHERE seqid = ?",
            )
            .bind(seq)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(row(1).await, ("pending".to_owned(), 1, Some(r#"["spam","link"]"#.to_owned()), 11));
    assert_eq!(row(2).await, ("pass".to_owned(), 0, None, 12), "no flags, no JSON");

    let released = store.set_audit(T, "grpAudit", 1, AuditStatus::Reject, &nothing_owed).await.unwrap();
    assert_eq!(released, Message { audit: AuditStatus::Reject, ..flagged });
    let (status, has_risk, _, updated) = row(1).await;
    assert_eq!((status.as_str(), has_risk), ("reject", 1));
    assert!(updated > 11, "set_audit moves updated_at");
}

#[tokio::test]
async fn in_memory_store_passes_contract_cases() {
    let make = || async { Fixture::new(SqliteStore::open_in_memory().await.unwrap()) };
    palaver_contract::cases::list_deletions_merges_ranges(make().await).await;
    palaver_contract::cases::concurrent_appends_all_stored(make().await).await;
    palaver_contract::cases::tenants_are_isolated(make().await).await;
    palaver_contract::cases::held_messages_are_visible_to_their_sender_only(make().await).await;
}

/// The embedded queue keeps records for its retention only, consumed or not, and survives reopening the file:
/// a group resumes after its commit.
#[tokio::test]
async fn embedded_queue_prunes_expired_records_and_survives_a_restart() {
    use palaver_core::ports::{QueueRecord, QueueTopic, TaskQueue};
    use palaver_store_sqlite::SqliteQueue;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let queue = SqliteQueue::with_retention(store.clone(), std::time::Duration::from_millis(50));
    for n in 0..3 {
        queue.produce(QueueRecord::new(QueueTopic::Audit, "k", vec![n])).await.unwrap();
    }
    let mut c = queue.subscribe(QueueTopic::Audit, "g").await.unwrap();
    let first = c.next().await.unwrap();
    c.commit(&first).await.unwrap();
    drop(c);
    store.close().await;
    let store = SqliteStore::open(&path).await.unwrap();
    let queue = SqliteQueue::with_retention(store.clone(), std::time::Duration::from_millis(50));
    let mut c = queue.subscribe(QueueTopic::Audit, "g").await.unwrap();
    assert_eq!(c.next().await.unwrap().record.payload, vec![1], "resumes after the commit, across a reopen");
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    assert_eq!(queue.prune().await.unwrap(), 3, "expired records go, consumed or not");
    queue.produce(QueueRecord::new(QueueTopic::Audit, "k", vec![9])).await.unwrap();
    let mut fresh = queue.subscribe(QueueTopic::Audit, "other").await.unwrap();
    let d = fresh.next().await.unwrap();
    assert_eq!((d.record.payload.clone(), d.offset), (vec![9], 4), "offsets are never reused after pruning");
}

/// A queue that lived in the store's file moves to a file of its own with its ids and committed offsets: a group
/// resumes at its next record, a new group still sees every record, the old file is emptied, and a second move,
/// or one into a queue that already holds records, moves nothing.
#[tokio::test]
async fn embedded_queue_moves_to_its_own_file_with_its_offsets() {
    use palaver_core::ports::{QueueRecord, QueueTopic, TaskQueue};
    use palaver_store_sqlite::{Adopted, SqliteQueue};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    let old = SqliteQueue::new(store.clone());
    let mut rec = QueueRecord::new(QueueTopic::Push, "t:1", vec![0]);
    rec.headers = vec![("seq".to_owned(), "1".to_owned())];
    old.produce_batch(vec![rec, QueueRecord::new(QueueTopic::Push, "t:1", vec![1])]).await.unwrap();
    old.produce(QueueRecord::new(QueueTopic::Audit, "a", vec![2])).await.unwrap();
    let mut c = old.subscribe(QueueTopic::Push, "g").await.unwrap();
    let first = c.next().await.unwrap();
    c.commit(&first).await.unwrap();
    drop(c);

    let own = SqliteQueue::new(SqliteStore::open(&dir.path().join("queue.db")).await.unwrap());
    assert_eq!(own.adopt(&store).await.unwrap(), Adopted { records: 3, offsets: 1 });
    let mut c = own.subscribe(QueueTopic::Push, "g").await.unwrap();
    let d = c.next().await.unwrap();
    assert_eq!((d.record.payload.clone(), d.offset), (vec![1], 2), "resumes after its commit, same ids");
    let mut fresh = own.subscribe(QueueTopic::Push, "new").await.unwrap();
    let d = fresh.next().await.unwrap();
    assert_eq!((d.record.payload.clone(), d.record.key.clone()), (vec![0], "t:1".to_owned()));
    assert_eq!(d.record.header("seq"), Some("1"), "headers move too");
    let mut audit = own.subscribe(QueueTopic::Audit, "g").await.unwrap();
    assert_eq!(audit.next().await.unwrap().record.payload, vec![2]);
    own.produce(QueueRecord::new(QueueTopic::Push, "t:1", vec![3])).await.unwrap();
    assert_eq!(c.next().await.unwrap().offset, 4, "new ids follow the moved ones");

    assert_eq!(own.adopt(&store).await.unwrap(), Adopted::default(), "the old file is empty after the move");
    old.produce(QueueRecord::new(QueueTopic::Push, "t:1", vec![4])).await.unwrap();
    assert_eq!(own.adopt(&store).await.unwrap(), Adopted::default(), "a queue with records takes no more");
    let mut left = old.subscribe(QueueTopic::Push, "left").await.unwrap();
    assert_eq!(left.next().await.unwrap().record.payload, vec![4], "and the old file keeps what it holds");
}

/// A moved queue whose records were all pruned keeps its id sequence: a record produced after the move gets an id
/// above the committed offsets, so the group that consumed everything before reads it.
#[tokio::test]
async fn a_moved_queue_keeps_its_id_sequence() {
    use palaver_core::ports::{QueueRecord, QueueTopic, TaskQueue};
    use palaver_store_sqlite::{Adopted, SqliteQueue};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("palaver.db")).await.unwrap();
    let old = SqliteQueue::with_retention(store.clone(), std::time::Duration::from_millis(20));
    for n in 0..3 {
        old.produce(QueueRecord::new(QueueTopic::Audit, "k", vec![n])).await.unwrap();
    }
    let mut c = old.subscribe(QueueTopic::Audit, "g").await.unwrap();
    for _ in 0..3 {
        let d = c.next().await.unwrap();
        c.commit(&d).await.unwrap();
    }
    drop(c);
    tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    assert_eq!(old.prune().await.unwrap(), 3);

    let own = SqliteQueue::new(SqliteStore::open(&dir.path().join("queue.db")).await.unwrap());
    assert_eq!(own.adopt(&store).await.unwrap(), Adopted { records: 0, offsets: 1 });
    own.produce(QueueRecord::new(QueueTopic::Audit, "k", vec![9])).await.unwrap();
    let mut c = own.subscribe(QueueTopic::Audit, "g").await.unwrap();
    let d = tokio::time::timeout(std::time::Duration::from_secs(5), c.next()).await.expect("not skipped").unwrap();
    assert_eq!((d.record.payload, d.offset), (vec![9], 4));
}

/// A consumer reading from memory misses nothing another process wrote to the same file: records it took ids
/// between this process's are read from the file, in order, and one written last is found by the fallback poll.
#[tokio::test]
async fn embedded_queue_reads_another_writers_records_in_order() {
    use palaver_core::ports::{QueueRecord, QueueTopic, TaskQueue};
    use palaver_store_sqlite::{POLL_FALLBACK, SqliteQueue};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let here = SqliteQueue::new(SqliteStore::open(&path).await.unwrap());
    let other = SqliteQueue::new(SqliteStore::open(&path).await.unwrap());
    let rec = |n: u8| QueueRecord::new(QueueTopic::Push, "k", vec![n]);
    let mut c = here.subscribe(QueueTopic::Push, "g").await.unwrap();
    here.produce_batch(vec![rec(0), rec(1)]).await.unwrap();
    here.produce(QueueRecord::new(QueueTopic::Audit, "k", vec![99])).await.unwrap();
    other.produce(rec(2)).await.unwrap();
    here.produce_batch(vec![rec(3), rec(4)]).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(c.next().await.unwrap().record.payload[0]);
    }
    assert_eq!(got, vec![0, 1, 2, 3, 4], "the other writer's record in its place");
    other.produce(rec(5)).await.unwrap();
    let d = tokio::time::timeout(POLL_FALLBACK * 3, c.next()).await.expect("found by the fallback poll").unwrap();
    assert_eq!(d.record.payload, vec![5]);
}

/// A consumer of a quiet topic moves past the ids other topics took (so it stops querying the file at each look),
/// and still reads what comes next: a record another process writes after the move, and this process's own.
#[tokio::test]
async fn a_quiet_topics_consumer_skips_other_topics_ids_and_misses_nothing() {
    use palaver_core::ports::{QueueRecord, QueueTopic, TaskQueue};
    use palaver_store_sqlite::{POLL_FALLBACK, SqliteQueue};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let here = SqliteQueue::new(SqliteStore::open(&path).await.unwrap());
    let other = SqliteQueue::new(SqliteStore::open(&path).await.unwrap());
    let audit = |n: u8| QueueRecord::new(QueueTopic::Audit, "a", vec![n]);
    let push = |n: u8| QueueRecord::new(QueueTopic::Push, "p", vec![n]);
    other.produce_batch((0..10).map(audit).collect()).await.unwrap();
    let mut c = here.subscribe(QueueTopic::Push, "g").await.unwrap();
    here.produce_batch((10..20).map(audit).collect()).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(100), c.next()).await.is_err(), "nothing of the topic yet");
    other.produce(push(1)).await.unwrap();
    here.produce(audit(20)).await.unwrap();
    here.produce(push(2)).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        let d = tokio::time::timeout(POLL_FALLBACK * 3, c.next()).await.expect("read").unwrap();
        got.push(d.record.payload[0]);
    }
    assert_eq!(got, vec![1, 2], "the other process's record first, then this one's");
    other.produce(push(3)).await.unwrap();
    let d = tokio::time::timeout(POLL_FALLBACK * 3, c.next()).await.expect("found by the fallback poll").unwrap();
    assert_eq!(d.record.payload, vec![3]);
    // A fresh member of the group starts at the committed offset (none): it reads all three.
    let mut fresh = here.subscribe(QueueTopic::Push, "g").await.unwrap();
    for want in 1..=3u8 {
        assert_eq!(fresh.next().await.unwrap().record.payload, vec![want]);
    }
}
