//! Contract cases for friend requests: idempotent creation, the daily count, who may decide a request, deciding
//! at most once, and accepts that race. [`crate::relation_contract_tests!`] runs them against any `RelationStore`.

use super::assert_not_found;
use crate::data::T0;
use crate::{Fixture, RelationStorage};
use palaver_core::ports::{
    CreateOutcome, Decision, FriendRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, RelationStore, RequestStatus,
};
use palaver_core::{StoreError, TenantId, UserId};

const A: UserId = UserId(1);
const B: UserId = UserId(2);
const C: UserId = UserId(3);

/// Creates a request that must be new, and returns it.
pub(crate) async fn request<S: RelationStore>(s: &S, t: TenantId, from: UserId, to: UserId) -> FriendRequest {
    match s.create_request(t, from, to, Some("hi"), T0).await.unwrap() {
        CreateOutcome::Created(r) => r,
        other => panic!("request {from:?} → {to:?}: expected Created, got {other:?}"),
    }
}

/// Makes `a` and `b` friends through a request from `a` that `b` accepts.
pub(crate) async fn befriend<S: RelationStore>(s: &S, t: TenantId, a: UserId, b: UserId) {
    let r = request(s, t, a, b).await;
    s.decide_request(t, r.id, b, Decision::Accept, T0 + 1).await.unwrap();
}

/// Panics unless `result` is `Conflict(reason)`.
#[track_caller]
fn assert_reason<T: std::fmt::Debug>(result: Result<T, StoreError>, reason: &str) {
    match result {
        Err(StoreError::Conflict(r)) => assert_eq!(r, reason),
        other => panic!("expected Conflict({reason:?}), got {other:?}"),
    }
}

/// A new request is pending with its message; asking again returns the same request and stores nothing new,
/// while the opposite direction is a request of its own.
pub async fn friend_request_create_is_idempotent<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let first = request(s, t, A, B).await;
    assert_eq!((first.from, first.to, first.message.as_deref()), (A, B, Some("hi")));
    assert_eq!((first.status, first.created, first.updated, first.handled), (RequestStatus::Pending, T0, T0, None));
    let again = s.create_request(t, A, B, Some("changed"), T0 + 5).await.unwrap();
    assert_eq!(again, CreateOutcome::AlreadyPending(first.clone()), "returned unchanged");
    assert_eq!(s.count_requests_since(t, A, 0).await.unwrap(), 1, "the repeat stored nothing");
    let back = request(s, t, B, A).await;
    assert!(back.id > first.id, "ids rise with creation");
    let rel = s.relation(t, A, B).await.unwrap();
    assert_eq!((rel.pending_out, rel.pending_in), (Some(first), Some(back)));
    assert!(!rel.friends && !rel.i_blocked && !rel.blocked_me);
}

/// Racing creations of the same request store exactly one.
pub async fn friend_request_concurrent_creates_store_one<S: RelationStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for to in 10..16u64 {
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let s = fx.store.clone();
                tokio::spawn(async move { s.create_request(t, A, UserId(to), None, T0).await.unwrap() })
            })
            .collect();
        let mut created = Vec::new();
        let mut pending = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                CreateOutcome::Created(r) => created.push(r),
                CreateOutcome::AlreadyPending(r) => pending.push(r),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!((created.len(), pending.len()), (1, 1), "to {to}");
        assert_eq!(created[0], pending[0], "both name the same request");
    }
    assert_eq!(fx.store.count_requests_since(t, A, 0).await.unwrap(), 6);
}

/// The daily count covers every request the user created since the given time, decided or not.
pub async fn friend_request_count_since<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_request(t, A, B, None, T0).await.unwrap();
    s.create_request(t, A, C, None, T0 + 10).await.unwrap();
    let late = match s.create_request(t, A, UserId(4), None, T0 + 20).await.unwrap() {
        CreateOutcome::Created(r) => r,
        other => panic!("{other:?}"),
    };
    s.decide_request(t, late.id, A, Decision::Cancel, T0 + 21).await.unwrap();
    s.create_request(t, B, C, None, T0 + 30).await.unwrap();
    assert_eq!(s.count_requests_since(t, A, T0).await.unwrap(), 3, "since is inclusive");
    assert_eq!(s.count_requests_since(t, A, T0 + 10).await.unwrap(), 2);
    assert_eq!(s.count_requests_since(t, A, T0 + 11).await.unwrap(), 1, "a cancelled request still counts");
    assert_eq!(s.count_requests_since(t, A, T0 + 21).await.unwrap(), 0);
    assert_eq!(s.count_requests_since(t, C, 0).await.unwrap(), 0);
}

/// An accepted request makes the two friends both ways, settles a pending request the other way, and refuses
/// a new request between them.
pub async fn friend_accept_makes_friends_both_ways<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = request(s, t, A, B).await;
    let back = request(s, t, B, A).await;
    let accepted = s.decide_request(t, r.id, B, Decision::Accept, T0 + 7).await.unwrap();
    let want = FriendRequest { status: RequestStatus::Accepted, updated: T0 + 7, handled: Some(T0 + 7), ..r };
    assert_eq!(accepted, want);
    for (me, other) in [(A, B), (B, A)] {
        let rel = s.relation(t, me, other).await.unwrap();
        assert!(rel.friends, "{me:?} sees {other:?} as a friend");
        assert_eq!((rel.pending_out, rel.pending_in), (None, None), "nothing left pending");
        let friends = s.list_friends(t, me, None, 10).await.unwrap();
        assert_eq!(friends.len(), 1);
        assert_eq!((friends[0].user, friends[0].friend, friends[0].remark.as_deref()), (me, other, None));
        assert_eq!((friends[0].created, friends[0].updated), (T0 + 7, T0 + 7));
    }
    let back = s.list_requests(t, B, false, None, None, 10).await.unwrap().into_iter().find(|q| q.id == back.id);
    assert_eq!(back.map(|q| q.status), Some(RequestStatus::Accepted), "the reverse request was settled");
    assert_eq!(s.create_request(t, A, B, None, T0 + 8).await.unwrap(), CreateOutcome::AlreadyFriends);
    assert_eq!(s.create_request(t, B, A, None, T0 + 8).await.unwrap(), CreateOutcome::AlreadyFriends);
}

/// Only the recipient accepts or rejects and only the sender cancels; a stranger does not even see it.
pub async fn friend_request_wrong_actor_refused<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = request(s, t, A, B).await;
    assert_reason(s.decide_request(t, r.id, A, Decision::Accept, T0 + 1).await, REQUEST_NOT_YOURS);
    assert_reason(s.decide_request(t, r.id, A, Decision::Reject, T0 + 1).await, REQUEST_NOT_YOURS);
    assert_reason(s.decide_request(t, r.id, B, Decision::Cancel, T0 + 1).await, REQUEST_NOT_YOURS);
    assert_not_found(s.decide_request(t, r.id, C, Decision::Accept, T0 + 1).await, "a stranger");
    assert_not_found(s.decide_request(t, r.id + 1000, B, Decision::Accept, T0 + 1).await, "an unknown id");
    assert_eq!(s.relation(t, A, B).await.unwrap().pending_out, Some(r.clone()), "still pending, unchanged");
    let cancelled = s.decide_request(t, r.id, A, Decision::Cancel, T0 + 2).await.unwrap();
    assert_eq!((cancelled.status, cancelled.handled), (RequestStatus::Cancelled, Some(T0 + 2)));
}

/// A decided request stays as decided: a second decision of any kind is refused and changes nothing.
pub async fn friend_request_decided_once<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = request(s, t, A, B).await;
    let rejected = s.decide_request(t, r.id, B, Decision::Reject, T0 + 3).await.unwrap();
    assert_eq!((rejected.status, rejected.handled), (RequestStatus::Rejected, Some(T0 + 3)));
    assert_reason(s.decide_request(t, r.id, B, Decision::Accept, T0 + 4).await, REQUEST_NOT_PENDING);
    assert_reason(s.decide_request(t, r.id, B, Decision::Reject, T0 + 4).await, REQUEST_NOT_PENDING);
    assert_reason(s.decide_request(t, r.id, A, Decision::Cancel, T0 + 4).await, REQUEST_NOT_PENDING);
    assert!(!s.relation(t, A, B).await.unwrap().friends);
    let listed = s.list_requests(t, B, true, None, None, 10).await.unwrap();
    assert_eq!(listed, vec![rejected], "the first decision stands");
    assert!(matches!(s.create_request(t, A, B, None, T0 + 5).await.unwrap(), CreateOutcome::Created(_)));
}

/// Two accepts racing on one request: exactly one succeeds, the other is told it is no longer pending, and the
/// friendship exists once (one row per direction). An accept racing a cancel likewise has one winner.
pub async fn friend_concurrent_accepts_make_one_friendship<S: RelationStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for from in 10..16u64 {
        let r = request(&fx.store, t, UserId(from), B).await;
        let (actor2, decision2) = if from % 2 == 0 { (B, Decision::Accept) } else { (UserId(from), Decision::Cancel) };
        let race = [(B, Decision::Accept), (actor2, decision2)].map(|(actor, decision)| {
            let s = fx.store.clone();
            tokio::spawn(async move { s.decide_request(t, r.id, actor, decision, T0 + 1).await })
        });
        let mut won = Vec::new();
        for task in race {
            match task.await.unwrap() {
                Ok(decided) => won.push(decided),
                Err(err) => assert_eq!(err, StoreError::Conflict(REQUEST_NOT_PENDING.to_owned())),
            }
        }
        assert_eq!(won.len(), 1, "one winner for request from {from}");
        let friends = won[0].status == RequestStatus::Accepted;
        assert_eq!(fx.store.relation(t, B, UserId(from)).await.unwrap().friends, friends);
        let theirs = fx.store.list_friends(t, UserId(from), None, 10).await.unwrap();
        assert_eq!(theirs.len(), usize::from(friends), "one row for {from}'s direction");
    }
    let mine = fx.store.list_friends(t, B, None, 10).await.unwrap();
    assert!(mine.len() >= 3, "every even sender's race ended in a friendship: {mine:?}");
    let mut ids: Vec<_> = mine.iter().map(|f| f.friend).collect();
    ids.dedup();
    assert_eq!(ids.len(), mine.len(), "no friendship stored twice");
}
