//! Contract cases for friendships and blocks: blocking and unblocking, remarks, removing a friend, paging through
//! the lists, and tenant isolation. [`crate::relation_contract_tests!`] runs them against any `RelationStore`.

use super::assert_not_found;
use super::requests::{befriend, request};
use crate::data::T0;
use crate::{Fixture, RelationStorage};
use palaver_core::UserId;
use palaver_core::ports::{CreateOutcome, Decision, Relation, RequestStatus};
use std::collections::HashSet;

const A: UserId = UserId(1);
const B: UserId = UserId(2);

/// A block cancels what is pending both ways, shows from both sides, refuses new requests either way, and is
/// lifted by an unblock.
pub async fn block_cancels_pending_and_shows_both_ways<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let (out, back) = (request(s, t, A, B).await, request(s, t, B, A).await);
    assert!(s.block(t, A, B, Some("spam"), T0 + 5).await.unwrap(), "a new block");
    assert!(!s.block(t, A, B, None, T0 + 6).await.unwrap(), "an existing block");
    for (user, incoming, id) in [(A, false, out.id), (A, true, back.id)] {
        let listed = s.list_requests(t, user, incoming, None, None, 10).await.unwrap();
        let r = listed.into_iter().find(|r| r.id == id).expect("still listed");
        assert_eq!((r.status, r.handled), (RequestStatus::Cancelled, Some(T0 + 5)), "request {id}");
    }
    let mine = s.relation(t, A, B).await.unwrap();
    assert_eq!(mine, Relation { i_blocked: true, ..Relation::default() });
    let theirs = s.relation(t, B, A).await.unwrap();
    assert_eq!(theirs, Relation { blocked_me: true, ..Relation::default() });
    assert!(s.is_blocked(t, A, B).await.unwrap());
    assert!(!s.is_blocked(t, B, A).await.unwrap(), "a block has a direction");
    assert_eq!(s.create_request(t, B, A, None, T0 + 7).await.unwrap(), CreateOutcome::Blocked);
    assert_eq!(s.create_request(t, A, B, None, T0 + 7).await.unwrap(), CreateOutcome::Blocked);
    let blocks = s.list_blocks(t, A, None, 10).await.unwrap();
    assert_eq!(blocks.len(), 1);
    assert_eq!((blocks[0].user, blocks[0].blocked, blocks[0].reason.as_deref()), (A, B, Some("spam")));
    assert_eq!(blocks[0].created, T0 + 5, "the second block changed nothing");
    assert!(s.list_blocks(t, B, None, 10).await.unwrap().is_empty());

    assert!(s.unblock(t, A, B).await.unwrap());
    assert!(!s.unblock(t, A, B).await.unwrap(), "nothing left to lift");
    assert!(!s.is_blocked(t, A, B).await.unwrap());
    assert_eq!(s.relation(t, B, A).await.unwrap(), Relation::default());
    assert!(matches!(s.create_request(t, B, A, None, T0 + 8).await.unwrap(), CreateOutcome::Created(_)));
}

/// A remark is each side's own, can be set and cleared, and needs a friendship.
pub async fn friend_remark_set_and_cleared<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert_not_found(s.set_remark(t, A, B, Some("Bob"), T0).await, "not friends yet");
    befriend(s, t, A, B).await;
    s.set_remark(t, A, B, Some("Bob"), T0 + 10).await.unwrap();
    let mine = s.list_friends(t, A, None, 10).await.unwrap();
    assert_eq!((mine[0].remark.as_deref(), mine[0].updated), (Some("Bob"), T0 + 10));
    assert_eq!(mine[0].created, T0 + 1, "created stays");
    assert_eq!(s.list_friends(t, B, None, 10).await.unwrap()[0].remark, None, "the other side keeps its own");
    s.set_remark(t, A, B, Some("Bob"), T0 + 11).await.unwrap();
    s.set_remark(t, A, B, None, T0 + 12).await.unwrap();
    let mine = s.list_friends(t, A, None, 10).await.unwrap();
    assert_eq!((mine[0].remark.as_deref(), mine[0].updated), (None, T0 + 12));
    assert_not_found(s.set_remark(t, A, UserId(9), Some("x"), T0).await, "a stranger");
}

/// Removing a friend ends both directions at once, from either side, and allows a new request.
pub async fn friend_remove_both_ways<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    befriend(s, t, A, B).await;
    befriend(s, t, A, UserId(3)).await;
    assert!(s.remove_friend(t, B, A).await.unwrap());
    assert!(!s.remove_friend(t, A, B).await.unwrap(), "already gone both ways");
    assert!(!s.relation(t, A, B).await.unwrap().friends && !s.relation(t, B, A).await.unwrap().friends);
    assert!(s.list_friends(t, B, None, 10).await.unwrap().is_empty());
    let left: Vec<_> = s.list_friends(t, A, None, 10).await.unwrap().into_iter().map(|f| f.friend).collect();
    assert_eq!(left, vec![UserId(3)], "other friendships stay");
    assert_not_found(s.set_remark(t, A, B, Some("x"), T0).await, "no longer friends");
    assert!(matches!(s.create_request(t, B, A, None, T0 + 9).await.unwrap(), CreateOutcome::Created(_)));
}

/// Paging through friends, blocks and requests with cursors: pages concatenate to the whole list, with no
/// duplicate and no gap, in the documented order (ids as signed 64-bit integers, so huge ids come first).
pub async fn relation_lists_page_by_cursor<S: RelationStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let ids: Vec<UserId> =
        (0..11u64).map(|i| UserId(100 + i * 7)).chain([UserId(u64::MAX - 3), UserId(1 << 63)]).collect();
    for &other in &ids {
        befriend(s, t, other, A).await;
        assert!(s.block(t, A, other, None, T0).await.unwrap());
    }
    let mut want: Vec<UserId> = ids.clone();
    want.sort_by_key(|u| u.0 as i64);
    let all: Vec<UserId> = s.list_friends(t, A, None, 100).await.unwrap().into_iter().map(|f| f.friend).collect();
    assert_eq!(all, want, "ordered by signed id");
    let (mut friends, mut blocks, mut cursor) = (Vec::new(), Vec::new(), None);
    loop {
        let page = s.list_friends(t, A, cursor, 4).await.unwrap();
        assert!(page.len() <= 4);
        let Some(last) = page.last() else { break };
        cursor = Some(last.friend);
        friends.extend(page.iter().map(|f| f.friend));
    }
    cursor = None;
    loop {
        let page = s.list_blocks(t, A, cursor, 5).await.unwrap();
        let Some(last) = page.last() else { break };
        cursor = Some(last.blocked);
        blocks.extend(page.iter().map(|b| b.blocked));
    }
    assert_eq!((friends, blocks), (want.clone(), want), "pages join without gaps or repeats");

    for i in 0..9u64 {
        request(s, t, UserId(1000 + i), B).await;
    }
    let newest_first = s.list_requests(t, B, true, None, None, 100).await.unwrap();
    assert!(newest_first.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let (mut seen, mut cursor) = (Vec::new(), None);
    loop {
        let page = s.list_requests(t, B, true, Some(RequestStatus::Pending), cursor, 2).await.unwrap();
        let Some(last) = page.last() else { break };
        cursor = Some(last.id);
        seen.extend(page);
    }
    assert_eq!(seen, newest_first);
    assert_eq!(seen.iter().map(|r| r.id).collect::<HashSet<_>>().len(), 9);
    let accepted = s.list_requests(t, A, true, Some(RequestStatus::Accepted), None, 100).await.unwrap();
    assert_eq!(accepted.len(), ids.len(), "every friendship came from a request A accepted");
    assert!(s.list_requests(t, A, true, Some(RequestStatus::Pending), None, 100).await.unwrap().is_empty());
    assert!(s.list_requests(t, A, false, None, None, 100).await.unwrap().is_empty(), "A sent none");
    let theirs = s.list_requests(t, ids[0], false, Some(RequestStatus::Accepted), None, 100).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert!(s.list_requests(t, ids[0], false, Some(RequestStatus::Pending), None, 100).await.unwrap().is_empty());
}

/// Equal user ids in two tenants never see each other's requests, friendships or blocks.
pub async fn relations_tenants_are_isolated<S: RelationStorage>(fx: Fixture<S>) {
    let (s, a, b) = (&fx.store, fx.tenant, fx.other_tenant);
    let r = request(s, a, A, B).await;
    assert_eq!(s.relation(b, A, B).await.unwrap(), Relation::default());
    assert_eq!(s.count_requests_since(b, A, 0).await.unwrap(), 0);
    assert!(s.list_requests(b, B, true, None, None, 10).await.unwrap().is_empty());
    assert_not_found(s.decide_request(b, r.id, B, Decision::Accept, T0).await, "another tenant's request");
    let again = s.create_request(b, A, B, None, T0).await.unwrap();
    assert!(matches!(again, CreateOutcome::Created(_)), "pending in a is not pending in b");

    s.decide_request(a, r.id, B, Decision::Accept, T0 + 1).await.unwrap();
    assert!(!s.relation(b, A, B).await.unwrap().friends);
    assert!(s.list_friends(b, A, None, 10).await.unwrap().is_empty());
    assert_not_found(s.set_remark(b, A, B, Some("x"), T0).await, "friends only in a");
    assert!(!s.remove_friend(b, A, B).await.unwrap());
    assert!(s.relation(a, A, B).await.unwrap().friends, "removing in b leaves a alone");

    assert!(s.block(b, A, B, None, T0 + 2).await.unwrap());
    assert!(!s.is_blocked(a, A, B).await.unwrap());
    assert!(s.list_blocks(a, A, None, 10).await.unwrap().is_empty());
    assert!(s.relation(a, B, A).await.unwrap().friends && !s.relation(a, B, A).await.unwrap().blocked_me);
    assert!(s.block(a, A, B, None, T0 + 3).await.unwrap(), "a's block is new in a");
    assert!(s.unblock(b, A, B).await.unwrap());
    assert!(s.is_blocked(a, A, B).await.unwrap(), "unblocking in b leaves a's block");
}
