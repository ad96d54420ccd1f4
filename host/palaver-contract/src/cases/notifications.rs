//! Contract cases for system notifications: ids and stored fields, paging newest first, unread-only lists, read
//! marks that are set at most once (also under a race), expiry, JSON content and tenant isolation.
//! [`crate::notification_contract_tests!`] runs them against any `NotificationStore`.

use super::assert_not_found;
use crate::data::T0;
use crate::{Fixture, NotificationStorage};
use palaver_core::ports::{NewNotification, Notification, NotificationStore};
use palaver_core::{TenantId, UnixMillis, UserId};
use serde_json::{Value, json};
use std::collections::HashSet;

const A: UserId = UserId(1);
const B: UserId = UserId(2);

/// A notice to `user` of the given kind, with a small content object, no source and no expiry.
fn notice(user: UserId, kind: &str) -> NewNotification {
    NewNotification {
        user,
        kind: kind.to_owned(),
        content: json!({ "text": format!("{kind} for {}", user.0) }),
        source_topic: None,
        source_seq: None,
        expires: None,
    }
}

/// Stores `n` at `now` and checks that the returned notice is `n` as stored: unread, created at `now`.
async fn add<S: NotificationStore>(s: &S, t: TenantId, n: NewNotification, now: UnixMillis) -> Notification {
    let stored = s.add(t, &n, now).await.unwrap();
    let want = Notification { id: stored.id, read: None, created: now, ..from_new(n) };
    assert_eq!(stored, want, "add returns the stored notice");
    stored
}

/// The notice `n` would become, before the store assigns the id and the times.
fn from_new(n: NewNotification) -> Notification {
    Notification {
        id: 0,
        user: n.user,
        kind: n.kind,
        content: n.content,
        source_topic: n.source_topic,
        source_seq: n.source_seq,
        read: None,
        created: 0,
        expires: n.expires,
    }
}

/// The ids of a list, in its order.
fn ids(list: &[Notification]) -> Vec<i64> {
    list.iter().map(|n| n.id).collect()
}

/// Ids rise with creation, every field comes back as written, and the list returns exactly what `add` returned.
pub async fn notification_add_assigns_rising_ids<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let sourced = NewNotification {
        source_topic: Some("grpAbCdEfGhIjK".to_owned()),
        source_seq: Some(42),
        expires: Some(T0 + 86_400_000),
        ..notice(A, "group_removed")
    };
    let first = add(s, t, notice(A, "friend_request"), T0).await;
    let second = add(s, t, sourced, T0 + 1).await;
    let third = add(s, t, notice(A, "moderation"), T0 + 2).await;
    assert!(first.id < second.id && second.id < third.id, "ids rise with creation");
    let listed = s.list(t, A, false, None, 10, T0 + 3).await.unwrap();
    assert_eq!(listed, vec![third, second, first], "stored as returned, newest first");
    assert_eq!(s.unread_count(t, A, T0 + 3).await.unwrap(), 3);
    assert!(s.list(t, B, false, None, 10, T0 + 3).await.unwrap().is_empty(), "private to their user");
    assert_eq!(s.unread_count(t, B, T0 + 3).await.unwrap(), 0);
}

/// Pages of a cursor walk join into the whole list newest first, with no duplicate and no gap, and only the
/// user's own notices; the cursor is exclusive and a zero limit returns nothing.
pub async fn notification_list_pages_newest_first<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let mut mine = Vec::new();
    for i in 0..10 {
        mine.push(add(s, t, notice(A, &format!("k{i}")), T0 + i).await.id);
        add(s, t, notice(B, "other"), T0 + i).await;
    }
    mine.reverse();
    let all = s.list(t, A, false, None, 100, T0 + 100).await.unwrap();
    assert_eq!(ids(&all), mine, "newest first");
    let (mut pages, mut seen, mut cursor) = (Vec::new(), Vec::new(), None);
    loop {
        let page = s.list(t, A, false, cursor, 4, T0 + 100).await.unwrap();
        let Some(last) = page.last() else { break };
        cursor = Some(last.id);
        pages.push(page.len());
        seen.extend(page);
    }
    assert_eq!(pages, vec![4, 4, 2], "three pages");
    assert_eq!(seen, all, "pages join without gaps or repeats");
    assert_eq!(seen.iter().map(|n| n.id).collect::<HashSet<_>>().len(), 10);
    let below = s.list(t, A, false, Some(mine[3]), 2, T0 + 100).await.unwrap();
    assert_eq!(ids(&below), mine[4..6].to_vec(), "strictly below the cursor");
    assert!(s.list(t, A, false, None, 0, T0 + 100).await.unwrap().is_empty(), "a zero limit");
}

/// `unread_only` lists just the unread notices, in the same order and with the same paging.
pub async fn notification_unread_only_lists_unread<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let mut all = Vec::new();
    for i in 0..6 {
        all.push(add(s, t, notice(A, "friend_request"), T0 + i).await.id);
    }
    for id in [all[1], all[4]] {
        assert!(s.mark_read(t, A, id, T0 + 50).await.unwrap());
    }
    let unread = s.list(t, A, true, None, 100, T0 + 60).await.unwrap();
    assert_eq!(ids(&unread), vec![all[5], all[3], all[2], all[0]]);
    assert!(unread.iter().all(|n| n.read.is_none()));
    let page = s.list(t, A, true, Some(all[3]), 1, T0 + 60).await.unwrap();
    assert_eq!(ids(&page), vec![all[2]], "unread paging skips the read ones");
    let everything = s.list(t, A, false, None, 100, T0 + 60).await.unwrap();
    assert_eq!(everything.len(), 6, "read notices stay in the full list");
    let read: Vec<i64> = everything.iter().filter(|n| n.read == Some(T0 + 50)).map(|n| n.id).collect();
    assert_eq!(read, vec![all[4], all[1]]);
    assert_eq!(s.unread_count(t, A, T0 + 60).await.unwrap(), 4);
}

/// A notice is marked read once: the first call says true, later ones false, and the first read time stays.
pub async fn notification_mark_read_once_keeps_first_time<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let n = add(s, t, notice(A, "friend_request"), T0).await;
    let other = add(s, t, notice(A, "friend_request"), T0).await;
    assert!(s.mark_read(t, A, n.id, T0 + 10).await.unwrap(), "unread until now");
    assert!(!s.mark_read(t, A, n.id, T0 + 20).await.unwrap(), "read already");
    assert_eq!(s.mark_all_read(t, A, T0 + 30).await.unwrap(), 1, "only the other one was unread");
    assert!(!s.mark_read(t, A, other.id, T0 + 40).await.unwrap());
    let listed = s.list(t, A, false, None, 10, T0 + 50).await.unwrap();
    assert_eq!(listed, vec![Notification { read: Some(T0 + 30), ..other }, Notification { read: Some(T0 + 10), ..n }]);
    assert_eq!(s.unread_count(t, A, T0 + 50).await.unwrap(), 0);
}

/// Another user's notice and an unknown id are both `NotFound`, and the foreign mark changes nothing.
pub async fn notification_mark_read_of_others_is_not_found<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let n = add(s, t, notice(A, "friend_request"), T0).await;
    assert_not_found(s.mark_read(t, B, n.id, T0 + 1).await, "another user's notice");
    assert_not_found(s.mark_read(t, A, n.id + 1000, T0 + 1).await, "an unknown id");
    assert_not_found(s.mark_read(t, A, -1, T0 + 1).await, "a negative id");
    assert_eq!(s.mark_all_read(t, B, T0 + 1).await.unwrap(), 0, "B has nothing to mark");
    assert_eq!(s.list(t, A, true, None, 10, T0 + 2).await.unwrap(), vec![n.clone()], "still unread for A");
    assert!(s.mark_read(t, A, n.id, T0 + 3).await.unwrap());
    assert_not_found(s.mark_read(t, B, n.id, T0 + 4).await, "read or not, still not B's");
}

/// Racing marks of one notice: exactly one call says true, and the read time kept is that call's.
pub async fn notification_concurrent_mark_read_once<S: NotificationStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for round in 0..5 {
        let id = add(&fx.store, t, notice(A, &format!("race{round}")), T0).await.id;
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let s = fx.store.clone();
                let now = T0 + 100 + i;
                tokio::spawn(async move { (now, s.mark_read(t, A, id, now).await.unwrap()) })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            let (now, changed) = task.await.unwrap();
            if changed {
                winners.push(now);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one call marks it");
        let listed = listed_one(&fx.store, t, id).await;
        assert_eq!(listed.read, Some(winners[0]), "round {round}: the winner's read time is kept");
    }
    assert_eq!(fx.store.unread_count(t, A, T0 + 200).await.unwrap(), 0);
}

/// The one listed notice of user A with the given id, at a time before any expiry the cases use.
async fn listed_one<S: NotificationStore>(s: &S, t: TenantId, id: i64) -> Notification {
    let listed = s.list(t, A, false, Some(id + 1), 1, T0 + 200).await.unwrap();
    listed.into_iter().find(|n| n.id == id).expect("listed")
}

/// Marking all read counts exactly the unread, unexpired notices of the user, leaves earlier read times alone,
/// and brings the unread count to zero.
pub async fn notification_mark_all_read_counts_unread<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let mut mine = Vec::new();
    for _ in 0..5 {
        mine.push(add(s, t, notice(A, "friend_request"), T0).await);
    }
    let expired = add(s, t, NewNotification { expires: Some(T0 + 20), ..notice(A, "old") }, T0).await;
    for _ in 0..2 {
        add(s, t, notice(B, "friend_request"), T0).await;
    }
    assert!(s.mark_read(t, A, mine[2].id, T0 + 1).await.unwrap());
    assert_eq!(s.unread_count(t, A, T0 + 10).await.unwrap(), 5, "four plain and one not yet expired");
    assert_eq!(s.mark_all_read(t, A, T0 + 50).await.unwrap(), 4, "the read and the expired one are left out");
    assert_eq!(s.unread_count(t, A, T0 + 50).await.unwrap(), 0);
    assert_eq!(s.mark_all_read(t, A, T0 + 60).await.unwrap(), 0, "nothing left");
    let listed = s.list(t, A, false, None, 10, T0 + 60).await.unwrap();
    assert_eq!(listed.len(), 5, "the expired one is gone");
    assert!(listed.iter().all(|n| n.id != expired.id));
    for n in &listed {
        let want = if n.id == mine[2].id { T0 + 1 } else { T0 + 50 };
        assert_eq!(n.read, Some(want), "notice {}", n.id);
    }
    assert_eq!(s.unread_count(t, B, T0 + 60).await.unwrap(), 2, "B's notices are untouched");
}

/// From its expiry on (an expiry equal to `now` included) a notice is not listed, counted or markable.
pub async fn notification_expired_are_gone<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let soon = add(s, t, NewNotification { expires: Some(T0 + 100), ..notice(A, "soon") }, T0).await;
    let later = add(s, t, NewNotification { expires: Some(T0 + 200), ..notice(A, "later") }, T0).await;
    let never = add(s, t, notice(A, "never"), T0).await;
    assert_eq!(ids(&s.list(t, A, false, None, 10, T0 + 99).await.unwrap()), vec![never.id, later.id, soon.id]);
    assert_eq!(s.unread_count(t, A, T0 + 99).await.unwrap(), 3, "alive one millisecond before");

    let at = T0 + 100;
    assert_eq!(ids(&s.list(t, A, false, None, 10, at).await.unwrap()), vec![never.id, later.id]);
    assert_eq!(ids(&s.list(t, A, true, None, 10, at).await.unwrap()), vec![never.id, later.id]);
    assert_eq!(s.unread_count(t, A, at).await.unwrap(), 2, "an expiry equal to now has passed");
    assert_not_found(s.mark_read(t, A, soon.id, at).await, "an expired notice");
    assert!(s.mark_read(t, A, later.id, T0 + 150).await.unwrap(), "alive until its own expiry");
    assert_not_found(s.mark_read(t, A, later.id, T0 + 250).await, "read, then expired");
    assert!(s.list(t, A, false, None, 10, T0 + 250).await.unwrap().iter().all(|n| n.id == never.id));
    assert_eq!(s.mark_all_read(t, A, T0 + 250).await.unwrap(), 1, "only the one without expiry");
    assert_eq!(s.unread_count(t, A, T0 + 250).await.unwrap(), 0);
}

/// Content keeps its exact JSON: nested objects and arrays, unicode, escapes, numbers, and non-object values.
pub async fn notification_content_round_trips<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let contents: Vec<Value> = vec![
        json!({
            "from": { "id": "usrAAAAAAAAAAA", "name": "Zoë 张伟 🦀", "tags": ["a", "b"] },
            "text": "line one\nline \"two\"\t\\ ✓",
            "counts": [0, -1, i64::MAX, 1.5],
            "flags": { "urgent": true, "muted": false, "none": null },
            "empty": { "object": {}, "array": [] }
        }),
        json!("just a sentence, 日本語"),
        json!([1, "two", { "three": 3 }]),
    ];
    for content in &contents {
        let n = NewNotification {
            content: content.clone(),
            source_topic: Some("p2pAbCdEfGhIjKlMnOpQrStUv".to_owned()),
            ..notice(A, "moderation")
        };
        add(s, t, n, T0).await;
    }
    let listed = s.list(t, A, false, None, 10, T0 + 1).await.unwrap();
    let got: Vec<Value> = listed.into_iter().rev().map(|n| n.content).collect();
    assert_eq!(got, contents, "content read back equals content written");
}

/// Equal user ids in two tenants never see each other's notices, counts or ids.
pub async fn notification_tenants_are_isolated<S: NotificationStorage>(fx: Fixture<S>) {
    let (s, a, b) = (&fx.store, fx.tenant, fx.other_tenant);
    let n = add(s, a, notice(A, "in_a"), T0).await;
    assert!(s.list(b, A, false, None, 10, T0 + 1).await.unwrap().is_empty());
    assert_eq!(s.unread_count(b, A, T0 + 1).await.unwrap(), 0);
    assert_not_found(s.mark_read(b, A, n.id, T0 + 1).await, "another tenant's notice");
    assert_eq!(s.mark_all_read(b, A, T0 + 1).await.unwrap(), 0);
    assert_eq!(s.list(a, A, true, None, 10, T0 + 1).await.unwrap(), vec![n.clone()], "still unread in a");

    let m = add(s, b, notice(A, "in_b"), T0 + 2).await;
    let in_a = s.list(a, A, false, None, 10, T0 + 3).await.unwrap();
    assert_eq!(in_a, vec![n.clone()], "b's notice is not listed in a");
    assert_eq!(s.list(b, A, false, None, 10, T0 + 3).await.unwrap(), vec![m.clone()]);
    assert_eq!(s.mark_all_read(b, A, T0 + 4).await.unwrap(), 1, "only b's own notice");
    assert_eq!(s.unread_count(a, A, T0 + 4).await.unwrap(), 1, "marking all in b leaves a unread");
    assert!(s.mark_read(a, A, n.id, T0 + 5).await.unwrap(), "a's notice is still unread in a");
    assert!(!s.mark_read(b, A, m.id, T0 + 6).await.unwrap(), "b's notice was read in b");
}
