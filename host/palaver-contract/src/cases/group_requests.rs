//! Contract cases for join requests: one pending request per user and group even under races, decisions taken
//! at most once, cancelling only one's own request, and listing a group's requests by status with a cursor.
//! [`crate::group_contract_tests!`] runs them against any `GroupStore`.

use super::assert_not_found;
use super::groups::{A, B, C, D, G, H, assert_reason};
use crate::data::T0;
use crate::{Fixture, GroupStorage};
use palaver_core::ports::{
    GroupStore, JoinDecision, JoinOutcome, JoinRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, RequestStatus,
};
use palaver_core::{StoreError, TenantId, UnixMillis, UserId};

/// Creates a request that must be new, and returns it.
async fn join<S: GroupStore>(s: &S, t: TenantId, topic: &str, user: UserId, at: UnixMillis) -> JoinRequest {
    match s.create_join_request(t, topic, user, None, None, at).await.unwrap() {
        JoinOutcome::Created(r) => r,
        other => panic!("join {topic} by {user:?}: expected Created, got {other:?}"),
    }
}

/// A new request is pending as asked; asking again returns it unchanged, invites are requests too, and each
/// group has its own.
pub async fn group_join_request_create_is_idempotent<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert_eq!(s.pending_join_request(t, G, B).await.unwrap(), None);
    let JoinOutcome::Created(r) = s.create_join_request(t, G, B, None, Some("let me in"), T0).await.unwrap() else {
        panic!("a new request");
    };
    let want = JoinRequest {
        id: r.id,
        topic: G.to_owned(),
        user: B,
        inviter: None,
        message: Some("let me in".to_owned()),
        status: RequestStatus::Pending,
        handled_by: None,
        created: T0,
        handled: None,
    };
    assert_eq!(r, want);
    let again = s.create_join_request(t, G, B, Some(A), Some("other"), T0 + 1).await.unwrap();
    assert_eq!(again, JoinOutcome::AlreadyPending(want.clone()), "returned unchanged");
    assert_eq!(s.pending_join_request(t, G, B).await.unwrap(), Some(want.clone()));
    assert_eq!(s.pending_join_request(t, G, C).await.unwrap(), None, "another user");
    assert_eq!(s.pending_join_request(t, H, B).await.unwrap(), None, "another group");

    let JoinOutcome::Created(invite) = s.create_join_request(t, G, C, Some(A), None, T0 + 2).await.unwrap() else {
        panic!("a new invite");
    };
    assert_eq!((invite.user, invite.inviter, invite.message.as_deref()), (C, Some(A), None));
    assert!(invite.id > r.id, "ids rise with creation");
    let elsewhere = join(s, t, H, B, T0 + 3).await;
    assert_eq!(elsewhere.topic, H);
    assert_eq!(s.list_join_requests(t, G, None, None, 10).await.unwrap(), vec![invite, want], "nothing duplicated");
}

/// Racing creations of the same request store exactly one.
pub async fn group_join_concurrent_creates_store_one<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for user in 10..16u64 {
        let race = [0, 1].map(|_| {
            let s = fx.store.clone();
            tokio::spawn(async move { s.create_join_request(t, G, UserId(user), None, None, T0).await.unwrap() })
        });
        let (mut created, mut pending) = (Vec::new(), Vec::new());
        for task in race {
            match task.await.unwrap() {
                JoinOutcome::Created(r) => created.push(r),
                JoinOutcome::AlreadyPending(r) => pending.push(r),
            }
        }
        assert_eq!((created.len(), pending.len()), (1, 1), "user {user}");
        assert_eq!(created[0], pending[0], "both name the same request");
    }
    let stored = fx.store.list_join_requests(t, G, Some(RequestStatus::Pending), None, 100).await.unwrap();
    assert_eq!(stored.len(), 6);
}

/// An approval or rejection is final: any later decision is refused and changes nothing, and the user may ask
/// again afterwards.
pub async fn group_join_request_decided_once<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = join(s, t, G, B, T0).await;
    let approved = s.decide_join_request(t, G, r.id, A, JoinDecision::Approve, T0 + 5).await.unwrap();
    let want = JoinRequest { status: RequestStatus::Accepted, handled_by: Some(A), handled: Some(T0 + 5), ..r };
    assert_eq!(approved, want);
    for (by, decision) in [(A, JoinDecision::Approve), (C, JoinDecision::Reject), (B, JoinDecision::Cancel)] {
        assert_reason(s.decide_join_request(t, G, want.id, by, decision, T0 + 6).await, REQUEST_NOT_PENDING);
    }
    assert_eq!(s.pending_join_request(t, G, B).await.unwrap(), None);
    assert_eq!(s.list_join_requests(t, G, None, None, 10).await.unwrap(), vec![want.clone()], "the first stands");

    let second = join(s, t, G, B, T0 + 7).await;
    assert!(second.id > want.id, "a new request after the decided one");
    let rejected = s.decide_join_request(t, G, second.id, D, JoinDecision::Reject, T0 + 8).await.unwrap();
    assert_eq!(
        (rejected.status, rejected.handled_by, rejected.handled),
        (RequestStatus::Rejected, Some(D), Some(T0 + 8))
    );
    assert_reason(s.decide_join_request(t, G, second.id, A, JoinDecision::Approve, T0 + 9).await, REQUEST_NOT_PENDING);
}

/// Only the user a request is for cancels it, and a request is found only through its own group.
pub async fn group_join_cancel_only_by_its_user<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let r = join(s, t, G, B, T0).await;
    assert_reason(s.decide_join_request(t, G, r.id, C, JoinDecision::Cancel, T0 + 1).await, REQUEST_NOT_YOURS);
    assert_reason(s.decide_join_request(t, G, r.id, A, JoinDecision::Cancel, T0 + 1).await, REQUEST_NOT_YOURS);
    assert_not_found(s.decide_join_request(t, H, r.id, A, JoinDecision::Approve, T0 + 1).await, "another group's id");
    assert_not_found(s.decide_join_request(t, G, r.id + 1000, A, JoinDecision::Approve, T0 + 1).await, "unknown id");
    assert_eq!(s.pending_join_request(t, G, B).await.unwrap(), Some(r.clone()), "still pending, unchanged");
    let cancelled = s.decide_join_request(t, G, r.id, B, JoinDecision::Cancel, T0 + 2).await.unwrap();
    let want = JoinRequest { status: RequestStatus::Cancelled, handled_by: Some(B), handled: Some(T0 + 2), ..r };
    assert_eq!(cancelled, want);
    assert_eq!(s.pending_join_request(t, G, B).await.unwrap(), None);
}

/// Two decisions racing on one request (two approvals, or an approval and a cancel): exactly one wins, the other
/// is told the request is no longer pending, and the stored status is the winner's.
pub async fn group_join_concurrent_decisions_one_wins<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for user in 10..16u64 {
        let r = join(&fx.store, t, G, UserId(user), T0).await;
        let second = if user % 2 == 0 { (B, JoinDecision::Approve) } else { (UserId(user), JoinDecision::Cancel) };
        let race = [(A, JoinDecision::Approve), second].map(|(by, decision)| {
            let s = fx.store.clone();
            tokio::spawn(async move { s.decide_join_request(t, G, r.id, by, decision, T0 + 1).await })
        });
        let mut won = Vec::new();
        for task in race {
            match task.await.unwrap() {
                Ok(decided) => won.push(decided),
                Err(err) => assert_eq!(err, StoreError::Conflict(REQUEST_NOT_PENDING.to_owned()), "user {user}"),
            }
        }
        assert_eq!(won.len(), 1, "one winner for user {user}");
        let stored = fx.store.list_join_requests(t, G, None, None, 100).await.unwrap();
        let stored = stored.into_iter().find(|q| q.id == r.id).expect("still listed");
        assert_eq!(stored, won[0], "the winner's decision is stored");
    }
}

/// A group's requests page newest first with a cursor, optionally in one status; pages concatenate to the whole
/// list, and other groups' requests never appear.
pub async fn group_join_requests_list_pages<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let mut made = Vec::new();
    for user in 10..20u64 {
        made.push(join(s, t, G, UserId(user), T0 + user as i64).await);
    }
    join(s, t, H, UserId(10), T0).await;
    for (i, decision) in [(1, JoinDecision::Reject), (2, JoinDecision::Approve), (3, JoinDecision::Reject)] {
        s.decide_join_request(t, G, made[i].id, A, decision, T0 + 50).await.unwrap();
    }
    let all = s.list_join_requests(t, G, None, None, 100).await.unwrap();
    assert_eq!(all.len(), 10);
    assert!(all.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    assert!(all.iter().all(|r| r.topic == G), "only this group's");
    let (mut paged, mut cursor) = (Vec::new(), None);
    loop {
        let page = s.list_join_requests(t, G, None, cursor, 3).await.unwrap();
        assert!(page.len() <= 3);
        let Some(last) = page.last() else { break };
        cursor = Some(last.id);
        paged.extend(page);
    }
    assert_eq!(paged, all, "pages concatenate to the whole list");

    let pending = s.list_join_requests(t, G, Some(RequestStatus::Pending), None, 100).await.unwrap();
    assert_eq!(pending.len(), 7);
    assert!(pending.iter().all(|r| r.status == RequestStatus::Pending));
    let next = s.list_join_requests(t, G, Some(RequestStatus::Pending), Some(pending[2].id), 2).await.unwrap();
    assert_eq!(next, pending[3..5].to_vec(), "strictly below the cursor, in one status");
    let rejected = s.list_join_requests(t, G, Some(RequestStatus::Rejected), None, 100).await.unwrap();
    let users: Vec<_> = rejected.iter().map(|r| r.user).collect();
    assert_eq!(users, vec![UserId(13), UserId(11)]);
    assert!(s.list_join_requests(t, G, Some(RequestStatus::Cancelled), None, 100).await.unwrap().is_empty());
    assert!(s.list_join_requests(t, G, None, None, 0).await.unwrap().is_empty(), "a zero limit");
    assert_eq!(s.list_join_requests(t, H, None, None, 100).await.unwrap().len(), 1);
}
