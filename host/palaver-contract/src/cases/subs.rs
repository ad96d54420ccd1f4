//! Contract cases for the subscription port: membership, access modes, cursors and soft deletion.

use super::assert_not_found;
use crate::data::{T0, sub};
use crate::{Fixture, Storage};
use palaver_core::{AccessMode, Subscription, UserId};
use serde_json::json;

/// Upserted subscriptions read back unchanged, replace earlier ones, and list by user and by topic.
pub async fn sub_upsert_get_list<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let subs = [sub("grpContract1", 1), sub("grpContract1", 2), sub("grpContract2", 1)];
    for x in &subs {
        s.upsert_sub(t, x).await.unwrap();
    }
    assert_eq!(s.get_sub(t, "grpContract1", UserId(2)).await.unwrap(), Some(subs[1].clone()));
    assert_eq!(s.get_sub(t, "grpContract1", UserId(3)).await.unwrap(), None);

    let replaced = Subscription { given: AccessMode::READ, private: None, read: 4, recv: 5, ..subs[0].clone() };
    s.upsert_sub(t, &replaced).await.unwrap();
    assert_eq!(s.get_sub(t, "grpContract1", UserId(1)).await.unwrap(), Some(replaced.clone()));

    let mut by_user = s.list_user_subs(t, UserId(1)).await.unwrap();
    let first = by_user.clone();
    by_user.sort_by(|a, b| a.topic.cmp(&b.topic));
    assert_eq!(by_user, vec![replaced.clone(), subs[2].clone()]);
    assert_eq!(s.list_user_subs(t, UserId(1)).await.unwrap(), first, "stable order");

    let mut by_topic = s.list_topic_subs(t, "grpContract1").await.unwrap();
    let first = by_topic.clone();
    by_topic.sort_by_key(|x| x.user);
    assert_eq!(by_topic, vec![replaced, subs[1].clone()]);
    assert_eq!(s.list_topic_subs(t, "grpContract1").await.unwrap(), first, "stable order");
    assert!(s.list_topic_subs(t, "grpContract3").await.unwrap().is_empty());
}

/// `private` changes alone, and never on a deleted subscription: a write that raced a removal does not revive it.
pub async fn sub_private_changes_only_an_active_subscription<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let topic = "grpContract1";
    s.upsert_sub(t, &sub(topic, 1)).await.unwrap();
    s.set_sub_private(t, topic, UserId(1), Some(&json!({ "note": "mine" })), T0 + 5).await.unwrap();
    let got = s.get_sub(t, topic, UserId(1)).await.unwrap().unwrap();
    assert_eq!((got.private, got.updated), (Some(json!({ "note": "mine" })), T0 + 5));
    s.set_sub_private(t, topic, UserId(1), None, T0 + 6).await.unwrap();
    assert_eq!(s.get_sub(t, topic, UserId(1)).await.unwrap().unwrap().private, None);
    s.remove_sub(t, topic, UserId(1), T0 + 7).await.unwrap();
    assert_not_found(s.set_sub_private(t, topic, UserId(1), Some(&json!(1)), T0 + 8).await, "after a removal");
    assert_eq!(s.get_sub(t, topic, UserId(1)).await.unwrap(), None, "still removed");
    assert!(s.was_removed(t, topic, UserId(1)).await.unwrap(), "the mark survives");
}

/// A member removed by someone else stays marked (the ban a plain join honours) until an upsert re-adds them;
/// leaving on one's own leaves no mark.
pub async fn sub_removed_by_others_is_marked<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let topic = "grpContract1";
    s.upsert_sub(t, &sub(topic, 1)).await.unwrap();
    s.upsert_sub(t, &sub(topic, 2)).await.unwrap();
    assert!(!s.was_removed(t, topic, UserId(1)).await.unwrap(), "an active member");
    assert!(!s.was_removed(t, topic, UserId(9)).await.unwrap(), "never a member");

    s.delete_sub(t, topic, UserId(1), T0 + 10).await.unwrap();
    assert!(!s.was_removed(t, topic, UserId(1)).await.unwrap(), "left on their own");

    s.remove_sub(t, topic, UserId(2), T0 + 10).await.unwrap();
    assert_eq!(s.get_sub(t, topic, UserId(2)).await.unwrap(), None, "removed members are gone");
    assert!(s.was_removed(t, topic, UserId(2)).await.unwrap());
    assert!(!s.was_removed(t, "grpContract2", UserId(2)).await.unwrap(), "only in that topic");
    assert_not_found(s.remove_sub(t, topic, UserId(2), T0 + 11).await, "second removal");

    s.upsert_sub(t, &Subscription { created: T0 + 20, updated: T0 + 20, ..sub(topic, 2) }).await.unwrap();
    assert!(!s.was_removed(t, topic, UserId(2)).await.unwrap(), "an invitation lifts the mark");
}

/// A deleted subscription is invisible and refuses changes until an upsert brings it back.
pub async fn sub_soft_delete_and_resurrect<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let (topic, user) = ("grpContract1", UserId(1));
    s.upsert_sub(t, &sub(topic, 1)).await.unwrap();
    s.upsert_sub(t, &sub(topic, 2)).await.unwrap();
    s.delete_sub(t, topic, user, T0 + 10).await.unwrap();

    assert_eq!(s.get_sub(t, topic, user).await.unwrap(), None);
    assert!(s.list_user_subs(t, user).await.unwrap().is_empty());
    let members: Vec<UserId> = s.list_topic_subs(t, topic).await.unwrap().into_iter().map(|x| x.user).collect();
    assert_eq!(members, vec![UserId(2)]);
    assert_not_found(s.delete_sub(t, topic, user, T0 + 11).await, "second delete");
    let mode = s.update_sub_mode(t, topic, user, AccessMode::READ, AccessMode::READ, T0 + 11).await;
    assert_not_found(mode, "mode of a deleted subscription");
    assert_not_found(s.update_sub_cursors(t, topic, user, Some(1), None).await, "cursors of a deleted one");
    assert_not_found(s.delete_sub(t, "grpContract2", user, T0).await, "delete of a missing subscription");

    let back = Subscription { created: T0 + 20, updated: T0 + 20, private: Some(json!("again")), ..sub(topic, 1) };
    s.upsert_sub(t, &back).await.unwrap();
    assert_eq!(s.get_sub(t, topic, user).await.unwrap(), Some(back.clone()));
    assert_eq!(s.list_user_subs(t, user).await.unwrap(), vec![back]);
}

/// Mode changes set want, given and updated, and need an active subscription.
pub async fn sub_update_mode<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let original = sub("grpContract1", 1);
    s.upsert_sub(t, &original).await.unwrap();
    let (want, given) = (AccessMode::OWNER_FULL, AccessMode::READ);
    s.update_sub_mode(t, "grpContract1", UserId(1), want, given, T0 + 3).await.unwrap();
    let got = s.get_sub(t, "grpContract1", UserId(1)).await.unwrap().unwrap();
    assert_eq!(got, Subscription { want, given, updated: T0 + 3, ..original });
    assert_eq!(got.mode(), AccessMode::READ);
    let missing = s.update_sub_mode(t, "grpContract1", UserId(2), want, given, T0).await;
    assert_not_found(missing, "mode of a missing subscription");
}

/// Cursors only rise, recv never stays below read, and the call returns `(recv, read)`.
pub async fn sub_cursors_are_monotonic<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let (topic, user) = ("grpContract1", UserId(1));
    s.upsert_sub(t, &sub(topic, 1)).await.unwrap();
    assert_eq!(s.update_sub_cursors(t, topic, user, Some(5), None).await.unwrap(), (5, 0));
    assert_eq!(s.update_sub_cursors(t, topic, user, None, Some(3)).await.unwrap(), (5, 3));
    assert_eq!(s.update_sub_cursors(t, topic, user, None, Some(8)).await.unwrap(), (8, 8), "recv follows read");
    assert_eq!(s.update_sub_cursors(t, topic, user, Some(2), Some(1)).await.unwrap(), (8, 8), "never lowered");
    assert_eq!(s.update_sub_cursors(t, topic, user, Some(9), Some(9)).await.unwrap(), (9, 9));
    assert_eq!(s.update_sub_cursors(t, topic, user, None, None).await.unwrap(), (9, 9));
    let got = s.get_sub(t, topic, user).await.unwrap().unwrap();
    assert_eq!((got.recv, got.read), (9, 9));
    assert_not_found(s.update_sub_cursors(t, topic, UserId(2), Some(1), None).await, "missing subscription");
}
