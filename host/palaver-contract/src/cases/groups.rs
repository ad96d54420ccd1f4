//! Contract cases for group roles: the owner set once, admins granted and revoked under a limit, ownership
//! moved only by a transfer, and the races on each. [`crate::group_contract_tests!`] runs them against any
//! `GroupStore`.

use crate::data::T0;
use crate::{Fixture, GroupStorage};
use palaver_core::ports::{ADMIN_LIMIT, GroupRole, GroupStore, NOT_OWNER, OWNER_ROLE, RoleGrant};
use palaver_core::{StoreError, TenantId, UnixMillis, UserId};

/// The group most cases work in, and a second one that must not see the first one's state.
pub(crate) const G: &str = "grpGovernance01";
pub(crate) const H: &str = "grpGovernance02";

pub(crate) const A: UserId = UserId(1);
pub(crate) const B: UserId = UserId(2);
pub(crate) const C: UserId = UserId(3);
pub(crate) const D: UserId = UserId(4);

/// Panics unless `result` is `Conflict(reason)`.
#[track_caller]
pub(crate) fn assert_reason<T: std::fmt::Debug>(result: Result<T, StoreError>, reason: &str) {
    match result {
        Err(StoreError::Conflict(r)) => assert_eq!(r, reason),
        other => panic!("expected Conflict({reason:?}), got {other:?}"),
    }
}

/// A stored role as [`GroupStore::roles`] lists it.
pub(crate) fn grant(user: UserId, role: GroupRole, granted_by: Option<UserId>, updated: UnixMillis) -> RoleGrant {
    RoleGrant { user, role, granted_by, updated }
}

/// Who holds the owner role, and how many owners there are.
async fn owners<S: GroupStore>(s: &S, t: TenantId, topic: &str) -> Vec<UserId> {
    let roles = s.roles(t, topic).await.unwrap();
    roles.into_iter().filter(|r| r.role == GroupRole::Owner).map(|r| r.user).collect()
}

/// The first owner is stored once; later calls, for anyone, write nothing. A group whose admin is made owner
/// keeps one row for that user.
pub async fn group_ensure_owner_once<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert!(s.roles(t, G).await.unwrap().is_empty(), "a new group has no stored roles");
    assert!(s.ensure_owner(t, G, A, T0).await.unwrap(), "the first owner is written");
    assert!(!s.ensure_owner(t, G, B, T0 + 1).await.unwrap(), "an owner exists already");
    assert!(!s.ensure_owner(t, G, A, T0 + 2).await.unwrap(), "the same owner again");
    assert_eq!(s.roles(t, G).await.unwrap(), vec![grant(A, GroupRole::Owner, None, T0)]);
    assert!(s.roles(t, H).await.unwrap().is_empty(), "another group has none");

    assert!(s.set_role(t, H, B, GroupRole::Admin, A, None, T0).await.unwrap());
    assert!(s.ensure_owner(t, H, B, T0 + 3).await.unwrap(), "an admin of an ownerless group becomes owner");
    assert_eq!(s.roles(t, H).await.unwrap(), vec![grant(B, GroupRole::Owner, None, T0 + 3)]);
}

/// Two first owners racing: exactly one call writes, and the group ends with exactly that owner.
pub async fn group_concurrent_ensure_owner_one_owner<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for g in 0..6 {
        let topic = format!("grpOwnerRace{g}");
        let race = [UserId(10), UserId(11)].map(|user| {
            let (s, topic) = (fx.store.clone(), topic.clone());
            tokio::spawn(async move { (user, s.ensure_owner(t, &topic, user, T0).await.unwrap()) })
        });
        let mut winners = Vec::new();
        for task in race {
            let (user, wrote) = task.await.unwrap();
            if wrote {
                winners.push(user);
            }
        }
        assert_eq!(winners.len(), 1, "one call wrote in {topic}");
        assert_eq!(owners(&fx.store, t, &topic).await, winners, "the writer is the only owner of {topic}");
    }
}

/// Admins are granted and revoked; a repeat changes nothing; the list has the owner first, then admins by id.
pub async fn group_set_role_admin_and_member<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    assert!(s.set_role(t, G, C, GroupRole::Admin, A, None, T0 + 1).await.unwrap());
    assert!(s.set_role(t, G, B, GroupRole::Admin, A, Some(5), T0 + 2).await.unwrap());
    assert!(!s.set_role(t, G, B, GroupRole::Admin, C, Some(5), T0 + 3).await.unwrap(), "already an admin");
    let want = vec![
        grant(A, GroupRole::Owner, None, T0),
        grant(B, GroupRole::Admin, Some(A), T0 + 2),
        grant(C, GroupRole::Admin, Some(A), T0 + 1),
    ];
    assert_eq!(s.roles(t, G).await.unwrap(), want, "the repeat kept the first grant");

    assert!(s.set_role(t, G, C, GroupRole::Member, A, None, T0 + 4).await.unwrap(), "revoked");
    assert!(!s.set_role(t, G, C, GroupRole::Member, A, None, T0 + 5).await.unwrap(), "nothing left to revoke");
    assert!(!s.set_role(t, G, D, GroupRole::Member, A, None, T0 + 5).await.unwrap(), "a plain member stays one");
    assert_eq!(s.roles(t, G).await.unwrap(), want[..2].to_vec());
    assert!(s.roles(t, H).await.unwrap().is_empty(), "roles belong to their group");
}

/// Granting admin beyond the limit is refused; the owner does not count, a repeat grant is not refused, and
/// a revoked admin frees a slot.
pub async fn group_admin_limit_refused<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    assert!(s.set_role(t, G, B, GroupRole::Admin, A, Some(2), T0 + 1).await.unwrap());
    assert!(s.set_role(t, G, C, GroupRole::Admin, A, Some(2), T0 + 2).await.unwrap(), "the owner is no admin");
    assert_reason(s.set_role(t, G, D, GroupRole::Admin, A, Some(2), T0 + 3).await, ADMIN_LIMIT);
    assert!(!s.set_role(t, G, B, GroupRole::Admin, A, Some(2), T0 + 3).await.unwrap(), "an admin already");
    assert_eq!(s.roles(t, G).await.unwrap().len(), 3, "the refused grant stored nothing");

    assert!(s.set_role(t, G, D, GroupRole::Admin, A, None, T0 + 4).await.unwrap(), "no limit passed");
    assert!(s.set_role(t, G, D, GroupRole::Member, A, Some(2), T0 + 5).await.unwrap(), "revoking ignores it");
    assert!(s.set_role(t, G, C, GroupRole::Member, A, None, T0 + 6).await.unwrap());
    assert!(s.set_role(t, G, D, GroupRole::Admin, A, Some(2), T0 + 7).await.unwrap(), "a freed slot");
    assert_reason(s.set_role(t, G, UserId(9), GroupRole::Admin, A, Some(0), T0 + 8).await, ADMIN_LIMIT);
    assert!(s.set_role(t, H, D, GroupRole::Admin, A, Some(1), T0 + 9).await.unwrap(), "the limit is per group");
}

/// Two grants racing for the last admin slot: exactly one succeeds, the other is refused with the limit.
pub async fn group_concurrent_grants_respect_limit<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for g in 0..6 {
        let topic = format!("grpGrantRace{g}");
        fx.store.ensure_owner(t, &topic, A, T0).await.unwrap();
        fx.store.set_role(t, &topic, B, GroupRole::Admin, A, Some(2), T0).await.unwrap();
        let race = [C, D].map(|user| {
            let (s, topic) = (fx.store.clone(), topic.clone());
            tokio::spawn(async move { (user, s.set_role(t, &topic, user, GroupRole::Admin, A, Some(2), T0 + 1).await) })
        });
        let mut granted = Vec::new();
        for task in race {
            match task.await.unwrap() {
                (user, Ok(changed)) => {
                    assert!(changed, "a grant that succeeds changes the role");
                    granted.push(user);
                }
                (_, refused) => assert_reason(refused, ADMIN_LIMIT),
            }
        }
        assert_eq!(granted.len(), 1, "one grant won in {topic}");
        let roles = fx.store.roles(t, &topic).await.unwrap();
        let admins: Vec<_> = roles.iter().filter(|r| r.role == GroupRole::Admin).map(|r| r.user).collect();
        assert_eq!(admins, vec![B, granted[0]], "two admins in {topic}");
    }
}

/// Nobody is made owner by `set_role`, and the owner's role cannot be changed by it.
pub async fn group_owner_role_refused<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    assert_reason(s.set_role(t, G, B, GroupRole::Owner, A, None, T0 + 1).await, OWNER_ROLE);
    assert_reason(s.set_role(t, G, A, GroupRole::Member, A, None, T0 + 1).await, OWNER_ROLE);
    assert_reason(s.set_role(t, G, A, GroupRole::Admin, A, Some(5), T0 + 1).await, OWNER_ROLE);
    assert_reason(s.set_role(t, G, A, GroupRole::Owner, A, None, T0 + 1).await, OWNER_ROLE);
    assert_eq!(s.roles(t, G).await.unwrap(), vec![grant(A, GroupRole::Owner, None, T0)], "nothing changed");
}

/// A transfer makes the new owner owner and the old one admin; only the current owner can transfer, and a
/// transfer to oneself changes nothing.
pub async fn group_transfer_owner_moves_ownership<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    s.set_role(t, G, B, GroupRole::Admin, A, None, T0 + 1).await.unwrap();
    s.transfer_owner(t, G, A, C, T0 + 5).await.unwrap();
    let want = vec![
        grant(C, GroupRole::Owner, Some(A), T0 + 5),
        grant(A, GroupRole::Admin, Some(A), T0 + 5),
        grant(B, GroupRole::Admin, Some(A), T0 + 1),
    ];
    assert_eq!(s.roles(t, G).await.unwrap(), want);
    assert_reason(s.transfer_owner(t, G, A, B, T0 + 6).await, NOT_OWNER);
    assert_reason(s.transfer_owner(t, G, B, A, T0 + 6).await, NOT_OWNER);
    assert_eq!(s.roles(t, G).await.unwrap(), want, "refused transfers changed nothing");

    s.transfer_owner(t, G, C, B, T0 + 7).await.unwrap();
    assert_eq!(owners(s, t, G).await, vec![B], "an admin becomes the owner");
    let admins: Vec<_> = s.roles(t, G).await.unwrap().into_iter().skip(1).map(|r| (r.user, r.role)).collect();
    assert_eq!(admins, vec![(A, GroupRole::Admin), (C, GroupRole::Admin)]);
    s.transfer_owner(t, G, B, B, T0 + 8).await.unwrap();
    assert_eq!(s.roles(t, G).await.unwrap()[0], grant(B, GroupRole::Owner, Some(C), T0 + 7), "to oneself");
    assert_reason(s.transfer_owner(t, H, A, B, T0 + 9).await, NOT_OWNER);
    assert!(s.roles(t, H).await.unwrap().is_empty(), "a group without an owner stays without");
}

/// Two transfers from the same owner racing: exactly one succeeds, the other finds the owner gone.
pub async fn group_concurrent_transfers_one_wins<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for g in 0..6 {
        let topic = format!("grpTransferRace{g}");
        fx.store.ensure_owner(t, &topic, A, T0).await.unwrap();
        let race = [B, C].map(|to| {
            let (s, topic) = (fx.store.clone(), topic.clone());
            tokio::spawn(async move { (to, s.transfer_owner(t, &topic, A, to, T0 + 1).await) })
        });
        let mut won = Vec::new();
        for task in race {
            match task.await.unwrap() {
                (to, Ok(())) => won.push(to),
                (_, refused) => assert_reason(refused, NOT_OWNER),
            }
        }
        assert_eq!(won.len(), 1, "one transfer won in {topic}");
        let roles: Vec<_> = fx.store.roles(t, &topic).await.unwrap().into_iter().map(|r| (r.user, r.role)).collect();
        assert_eq!(roles, vec![(won[0], GroupRole::Owner), (A, GroupRole::Admin)], "one owner in {topic}");
    }
}
