//! Contract cases for the topic port: creation, description changes, deletion and tag search.

use super::{assert_conflict, assert_not_found};
use crate::data::{T0, group, msg, p2p, sub, tagged_group, tags};
use crate::{Fixture, Storage};
use palaver_core::{
    AccessMode, AppendOutcome, DefaultAccess, DeleteMessages, Deletions, MessageQuery, RecordState, SeqRange, Topic,
    TopicUpdate, UserId,
};
use serde_json::{Value, json};

const ALL: MessageQuery = MessageQuery { since: None, before: None, limit: 1000 };

/// A created topic reads back unchanged and its name cannot be taken again.
pub async fn topic_create_get_conflict<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let g = tagged_group("grpContract1", &["news"]);
    s.create_topic(t, &g).await.unwrap();
    assert_eq!(s.get_topic(t, &g.name).await.unwrap(), Some(g.clone()));
    assert_conflict(s.create_topic(t, &group("grpContract1")).await, "same topic name");
    assert_eq!(s.get_topic(t, &g.name).await.unwrap(), Some(g), "the refused create changed nothing");
    assert_eq!(s.get_topic(t, "grpMissing").await.unwrap(), None);

    let p = p2p(10, 11);
    s.create_topic(t, &p).await.unwrap();
    assert_eq!(s.get_topic(t, &p.name).await.unwrap(), Some(p));
}

/// Updates change only the fields they name; `Null` clears.
pub async fn topic_update<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let g = Topic { trusted: Some(json!({ "staff": true })), ..tagged_group("grpContract1", &["news"]) };
    s.create_topic(t, &g).await.unwrap();
    let defacs = DefaultAccess { auth: AccessMode::READ, anon: AccessMode::NONE };
    let update = TopicUpdate {
        updated: T0 + 7,
        public: Some(Value::Null),
        trusted: None,
        tags: Some(tags(&["sports"])),
        defacs: Some(defacs),
        owner: Some(UserId(2)),
    };
    s.update_topic(t, &g.name, &update).await.unwrap();
    let expected =
        Topic { updated: T0 + 7, public: None, tags: tags(&["sports"]), defacs, owner: Some(UserId(2)), ..g.clone() };
    assert_eq!(s.get_topic(t, &g.name).await.unwrap(), Some(expected));

    let update = TopicUpdate { updated: T0 + 8, public: Some(json!({ "fn": "Renamed" })), ..TopicUpdate::default() };
    s.update_topic(t, &g.name, &update).await.unwrap();
    let got = s.get_topic(t, &g.name).await.unwrap().unwrap();
    assert_eq!(
        (got.public, got.owner, got.tags),
        (Some(json!({ "fn": "Renamed" })), Some(UserId(2)), tags(&["sports"]))
    );
    assert_not_found(s.update_topic(t, "grpMissing", &update).await, "update of a missing topic");
}

/// Deleting a topic removes its subscriptions, messages and deletion log; the name can then be reused afresh.
pub async fn topic_delete_removes_subs_and_messages<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let name = "grpContract1";
    s.create_topic(t, &group(name)).await.unwrap();
    s.create_topic(t, &group("grpContract2")).await.unwrap();
    for user in [1, 2] {
        s.upsert_sub(t, &sub(name, user)).await.unwrap();
    }
    s.upsert_sub(t, &sub("grpContract2", 1)).await.unwrap();
    for seq in 1..=3 {
        s.append(t, &msg(name, seq, 1)).await.unwrap();
    }
    s.append(t, &msg("grpContract2", 1, 1)).await.unwrap();
    let request = DeleteMessages {
        ranges: vec![SeqRange { low: 1, hi: 2 }],
        hard: true,
        for_user: UserId(1),
        when: T0 + 1,
        recalled_by: None,
    };
    s.delete_messages(t, name, &request).await.unwrap();

    s.delete_topic(t, name).await.unwrap();
    assert_eq!(s.get_topic(t, name).await.unwrap(), None);
    assert_eq!(s.get_sub(t, name, UserId(1)).await.unwrap(), None);
    assert!(s.list_topic_subs(t, name).await.unwrap().is_empty());
    let user_topics: Vec<String> = s.list_user_subs(t, UserId(1)).await.unwrap().into_iter().map(|s| s.topic).collect();
    assert_eq!(user_topics, vec!["grpContract2".to_owned()]);
    assert!(s.list_messages(t, name, UserId(1), &ALL).await.unwrap().is_empty());
    assert_eq!(s.max_seq(t, name).await.unwrap(), 0);
    assert_eq!(s.list_deletions(t, name, UserId(1)).await.unwrap(), Deletions::default());
    assert_not_found(s.delete_topic(t, name).await, "second delete");

    assert_eq!(s.list_messages(t, "grpContract2", UserId(1), &ALL).await.unwrap().len(), 1, "others untouched");
    s.create_topic(t, &group(name)).await.unwrap();
    assert_eq!(s.append(t, &msg(name, 1, 1)).await.unwrap(), AppendOutcome::Stored, "old seqs are gone");
}

/// Tag search finds active group topics having any of the tags, up to the limit, in a stable order.
pub async fn topic_tag_search<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &tagged_group("grpContract1", &["news", "daily"])).await.unwrap();
    s.create_topic(t, &tagged_group("grpContract2", &["daily"])).await.unwrap();
    s.create_topic(t, &tagged_group("grpContract3", &["sports"])).await.unwrap();
    let suspended = Topic { state: RecordState::Suspended, ..tagged_group("grpContract4", &["news"]) };
    s.create_topic(t, &suspended).await.unwrap();
    s.create_topic(t, &Topic { tags: tags(&["news"]), ..p2p(10, 11) }).await.unwrap();

    let names = |topics: Vec<Topic>| topics.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let first = names(s.find_topics_by_tags(t, &tags(&["news", "daily"]), 10).await.unwrap());
    let mut found = first.clone();
    found.sort();
    assert_eq!(found, vec!["grpContract1", "grpContract2"], "each group once; suspended and P2P left out");
    assert_eq!(names(s.find_topics_by_tags(t, &tags(&["news", "daily"]), 10).await.unwrap()), first);
    assert_eq!(s.find_topics_by_tags(t, &tags(&["news", "daily"]), 1).await.unwrap().len(), 1);
    assert!(s.find_topics_by_tags(t, &tags(&["chess"]), 10).await.unwrap().is_empty());

    let update = TopicUpdate { updated: T0 + 1, tags: Some(tags(&["chess"])), ..TopicUpdate::default() };
    s.update_topic(t, "grpContract3", &update).await.unwrap();
    assert!(s.find_topics_by_tags(t, &tags(&["sports"]), 10).await.unwrap().is_empty());
    assert_eq!(names(s.find_topics_by_tags(t, &tags(&["chess"]), 10).await.unwrap()), vec!["grpContract3"]);
}
