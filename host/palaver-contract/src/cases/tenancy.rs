//! Contract cases for tenant isolation: equal ids, logins and topic names in two tenants never meet.

use super::messages::seqs;
use crate::data::{T0, auth, group, msg, msg_mid, sub, tagged_group, tagged_user, tags};
use crate::{Fixture, Storage};
use palaver_core::{AppendOutcome, DeleteMessages, Deletions, MessageQuery, SeqRange, User, UserId};
use serde_json::json;

const TOPIC: &str = "grpContract1";
const ALL: MessageQuery = MessageQuery { since: None, before: None, limit: 1000 };

/// Users, credentials, topics, subscriptions and searches are per tenant.
pub async fn tenants_are_isolated<S: Storage>(fx: Fixture<S>) {
    let (s, a, b) = (&fx.store, fx.tenant, fx.other_tenant);
    let ua = tagged_user(10, &["shared"]);
    let ub = User { public: Some(json!({ "fn": "Other" })), ..tagged_user(10, &["shared"]) };
    s.create_user(a, &ua, Some(&auth(10, "alice", "ha"))).await.unwrap();
    s.create_user(b, &ub, Some(&auth(10, "alice", "hb"))).await.unwrap();
    assert_eq!(s.get_user(a, UserId(10)).await.unwrap(), Some(ua.clone()));
    assert_eq!(s.get_user(b, UserId(10)).await.unwrap(), Some(ub));
    assert_eq!(s.find_auth(a, "alice").await.unwrap().unwrap().secret_hash, "ha");
    assert_eq!(s.find_auth(b, "ALICE").await.unwrap().unwrap().secret_hash, "hb");
    assert_eq!(s.set_secret(a, UserId(10), "ha2", &[]).await.unwrap(), 1);
    assert_eq!(s.find_auth(b, "alice").await.unwrap().unwrap().secret_hash, "hb");
    assert_eq!(s.get_user(b, UserId(10)).await.unwrap().unwrap().auth_version, 0);

    s.create_user(a, &tagged_user(11, &["only-a"]), Some(&auth(11, "carol", "h"))).await.unwrap();
    assert_eq!(s.get_user(b, UserId(11)).await.unwrap(), None);
    assert_eq!(s.find_auth(b, "carol").await.unwrap(), None);
    assert!(s.find_users_by_tags(b, &tags(&["only-a"]), 10).await.unwrap().is_empty());
    assert_eq!(s.find_users_by_tags(b, &tags(&["shared"]), 10).await.unwrap().len(), 1);

    s.create_topic(a, &tagged_group(TOPIC, &["t-a"])).await.unwrap();
    assert_eq!(s.get_topic(b, TOPIC).await.unwrap(), None);
    assert!(s.find_topics_by_tags(b, &tags(&["t-a"]), 10).await.unwrap().is_empty());
    s.create_topic(b, &group(TOPIC)).await.unwrap();
    s.upsert_sub(a, &sub(TOPIC, 10)).await.unwrap();
    assert_eq!(s.get_sub(b, TOPIC, UserId(10)).await.unwrap(), None);
    assert!(s.list_user_subs(b, UserId(10)).await.unwrap().is_empty());
    assert!(s.list_topic_subs(b, TOPIC).await.unwrap().is_empty());
    s.upsert_sub(b, &sub(TOPIC, 10)).await.unwrap();
    s.delete_sub(b, TOPIC, UserId(10), T0 + 1).await.unwrap();
    assert!(s.get_sub(a, TOPIC, UserId(10)).await.unwrap().is_some(), "deleting in b leaves a alone");
    assert_eq!(s.update_sub_cursors(a, TOPIC, UserId(10), Some(3), None).await.unwrap(), (3, 0));

    s.delete_topic(a, TOPIC).await.unwrap();
    assert!(s.get_topic(b, TOPIC).await.unwrap().is_some(), "deleting in a leaves b alone");
}

/// Message seqs, idempotency keys and deletion logs are per tenant.
pub async fn tenant_histories_are_isolated<S: Storage>(fx: Fixture<S>) {
    let (s, a, b) = (&fx.store, fx.tenant, fx.other_tenant);
    for tenant in [a, b] {
        s.create_topic(tenant, &group(TOPIC)).await.unwrap();
        s.upsert_sub(tenant, &sub(TOPIC, 1)).await.unwrap();
    }
    assert_eq!(s.append(a, &msg_mid(TOPIC, 1, 1, "k")).await.unwrap(), AppendOutcome::Stored);
    assert_eq!(s.append(b, &msg_mid(TOPIC, 1, 1, "k")).await.unwrap(), AppendOutcome::Stored, "same seq and key");
    s.append(a, &msg(TOPIC, 2, 1)).await.unwrap();
    assert_eq!((s.max_seq(a, TOPIC).await.unwrap(), s.max_seq(b, TOPIC).await.unwrap()), (2, 1));
    assert_eq!(s.get_topic(b, TOPIC).await.unwrap().unwrap().seq, 1);
    assert_eq!(s.find_by_client_mid(b, TOPIC, UserId(1), "k").await.unwrap(), Some(1));
    assert_eq!(seqs(s, b, TOPIC, 1, ALL).await, vec![1]);

    let hard = DeleteMessages {
        ranges: vec![SeqRange { low: 1, hi: 3 }],
        hard: true,
        for_user: UserId(1),
        when: T0,
        recalled_by: None,
    };
    assert_eq!(s.delete_messages(a, TOPIC, &hard).await.unwrap(), 1);
    assert!(seqs(s, a, TOPIC, 1, ALL).await.is_empty());
    assert_eq!(seqs(s, b, TOPIC, 1, ALL).await, vec![1], "a hard delete in a leaves b's history");
    assert_eq!(s.list_deletions(b, TOPIC, UserId(1)).await.unwrap(), Deletions::default());
    assert_eq!(s.get_topic(b, TOPIC).await.unwrap().unwrap().del_id, 0);
    let soft = DeleteMessages { hard: false, ..hard };
    assert_eq!(s.delete_messages(b, TOPIC, &soft).await.unwrap(), 1, "deletion ids count per tenant");
}
