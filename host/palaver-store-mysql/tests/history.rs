//! What the history tables hold beyond the contract: the table each kind of topic uses, the derived
//! columns, UTC `DATETIME(3)` times, and hard-delete stubs.

mod common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::Scratch;
use palaver_contract::bare_topic as topic;
use palaver_core::ports::{MessageStore, TenantStore, TopicStore};
use palaver_core::{AuditStatus, DeleteMessages, Message, SeqRange, TopicKind, UserId, p2p_name};
use serde_json::json;

/// One stored row's derived and bookkeeping columns.
#[derive(Debug, PartialEq, sqlx::FromRow)]
struct Derived {
    group_id: i64,
    msg_type: String,
    status: String,
    mentioned_user_ids: Option<String>,
    mention_all: bool,
    reply_seqid: Option<i64>,
    file_count: i32,
    content_size: i32,
    has_risk: bool,
    audit_status: String,
    risk_flags: Option<String>,
    created: String,
}

const DERIVED: &str = "SELECT group_id, msg_type, status, mentioned_user_ids, mention_all, reply_seqid, file_count, \
                       content_size, has_risk, audit_status, risk_flags, \
                       DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') AS created \
                       FROM im_group_messages WHERE seqid = ?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_columns_routing_and_stubs() {
    if common::skip() {
        return;
    }
    let scratch = Scratch::new();
    let store = scratch.store().await;
    let t = store.create_tenant("acme", "Acme").await.unwrap().id;
    let group_id: u64 = 0x00ab_cdef_0123_4567;
    let name = format!("grp{}", URL_SAFE_NO_PAD.encode(group_id.to_le_bytes()));
    let p2p = p2p_name(UserId(1), UserId(2));
    store.create_topic(t, &topic(&name, TopicKind::Group)).await.unwrap();
    store.create_topic(t, &topic(&p2p, TopicKind::P2p)).await.unwrap();

    let drafty = json!({ "txt": "look @bob", "ent": [{ "tp": "IM", "data": { "mime": "image/png" } }] });
    let mut head = serde_json::Map::new();
    head.insert("mentions".into(), json!([UserId(42).to_string(), "all"]));
    head.insert("reply".into(), json!(":1"));
    let flagged = Message {
        topic: name.clone(),
        seq: 2,
        created: 1_700_000_000_123,
        from: UserId(u64::MAX),
        head: Some(head),
        content: drafty.clone(),
        client_mid: Some("k2".into()),
        audit: AuditStatus::Pending,
        risk_flags: vec!["spam".into()],
    };
    let plain = Message {
        seq: 1,
        head: None,
        content: json!("hi"),
        client_mid: None,
        audit: AuditStatus::Pass,
        risk_flags: Vec::new(),
        ..flagged.clone()
    };
    store.append(t, &plain).await.unwrap();
    store.append(t, &flagged).await.unwrap();
    store.append(t, &Message { topic: p2p.clone(), ..plain.clone() }).await.unwrap();

    let mut conn = scratch.connect("t_acme").await;
    let row: Derived = sqlx::query_as(DERIVED).bind(2).fetch_one(&mut conn).await.unwrap();
    assert_eq!(
        row,
        Derived {
            group_id: group_id as i64,
            msg_type: "image".into(),
            status: "normal".into(),
            mentioned_user_ids: Some("[42]".into()),
            mention_all: true,
            reply_seqid: Some(1),
            file_count: 1,
            content_size: i32::try_from(drafty.to_string().len()).unwrap(),
            has_risk: true,
            audit_status: "pending".into(),
            risk_flags: Some(r#"["spam"]"#.into()),
            created: "2023-11-14 22:13:20.123000".into(),
        }
    );
    let from: i64 = sqlx::query_scalar("SELECT from_user FROM im_group_messages WHERE seqid = 2")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(from, -1, "user ids above i64::MAX are reinterpreted, not truncated");
    let p2p_rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM im_messages WHERE topic = ?")
        .bind(&p2p)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(p2p_rows, 1, "P2P history goes to im_messages");
    let read_back = store
        .list_messages(t, &name, UserId(u64::MAX), &palaver_core::MessageQuery { since: None, before: None, limit: 10 })
        .await
        .unwrap();
    assert_eq!(read_back, vec![flagged.clone(), plain.clone()], "times and every field round-trip");

    let request = DeleteMessages {
        ranges: vec![SeqRange { low: 2, hi: 3 }],
        hard: true,
        for_user: UserId(1),
        when: 99,
        recalled_by: None,
    };
    store.delete_messages(t, &name, &request).await.unwrap();
    let stub: (String, Option<String>, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT status, content, head, DATE_FORMAT(deleted_at, '%Y-%m-%d %H:%i:%s.%f') \
         FROM im_group_messages WHERE seqid = 2",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(stub, ("deleted".into(), None, None, Some("1970-01-01 00:00:00.099000".into())));
    // A sender's recall: stored as recalled, by whom and when, its version bumped.
    let recall =
        DeleteMessages { ranges: vec![SeqRange { low: 1, hi: 2 }], recalled_by: Some(UserId(7)), when: 120, ..request };
    store.delete_messages(t, &name, &recall).await.unwrap();
    let recalled: (String, Option<i64>, Option<String>, i32) = sqlx::query_as(
        "SELECT status, recalled_by, DATE_FORMAT(recalled_at, '%Y-%m-%d %H:%i:%s.%f'), version \
         FROM im_group_messages WHERE seqid = 1",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(recalled, ("recalled".into(), Some(7), Some("1970-01-01 00:00:00.120000".into()), 2));
    assert_eq!(store.find_by_client_mid(t, &name, UserId(u64::MAX), "k2").await.unwrap(), Some(2), "key kept");
    assert_eq!(store.max_seq(t, &name).await.unwrap(), 2, "seq kept");
}
