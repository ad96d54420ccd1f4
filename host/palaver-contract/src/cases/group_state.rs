//! Contract cases for the rest of a group's governance state: mutes of one member or of everyone, forgetting a
//! member who left, the settings, and tenant isolation of all of it. [`crate::group_contract_tests!`] runs them
//! against any `GroupStore`.

use super::assert_not_found;
use super::groups::{A, B, C, D, G, H, grant};
use crate::data::T0;
use crate::{Fixture, GroupStorage};
use palaver_core::UserId;
use palaver_core::ports::{
    AnnouncementDraft, GroupRole, GroupSettings, JoinDecision, JoinOutcome, JoinPolicy, Mute, RequestStatus,
};
use serde_json::json;

/// A mute as [`palaver_core::ports::GroupStore::mutes`] lists it, created and updated at `at`.
fn muted(user: Option<UserId>, by: UserId, reason: Option<&str>, until: Option<i64>, at: i64) -> Mute {
    Mute { user, muted_by: Some(by), reason: reason.map(str::to_owned), until, created: at, updated: at }
}

/// Members and everyone are muted and unmuted; a new mute of the same target replaces the old one (keeping
/// when it was first created), and the mute of everyone is listed first.
pub async fn group_mute_unmute_member_and_everyone<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    assert!(s.mutes(t, G, T0).await.unwrap().is_empty());
    s.mute(t, G, Some(C), A, None, None, T0 + 2).await.unwrap();
    s.mute(t, G, Some(B), A, Some("spam"), Some(T0 + 100), T0).await.unwrap();
    s.mute(t, G, None, A, None, None, T0 + 1).await.unwrap();
    let everyone = muted(None, A, None, None, T0 + 1);
    let c = muted(Some(C), A, None, None, T0 + 2);
    let want = vec![everyone.clone(), muted(Some(B), A, Some("spam"), Some(T0 + 100), T0), c.clone()];
    assert_eq!(s.mutes(t, G, T0 + 10).await.unwrap(), want);
    assert!(s.mutes(t, H, T0 + 10).await.unwrap().is_empty(), "mutes belong to their group");

    s.mute(t, G, Some(B), D, Some("again"), None, T0 + 20).await.unwrap();
    let b = Mute { muted_by: Some(D), reason: Some("again".into()), until: None, updated: T0 + 20, ..want[1].clone() };
    assert_eq!(s.mutes(t, G, T0 + 20).await.unwrap(), vec![everyone.clone(), b, c.clone()], "replaced");

    assert!(s.unmute(t, G, Some(B)).await.unwrap());
    assert!(!s.unmute(t, G, Some(B)).await.unwrap(), "nothing left to lift");
    assert_eq!(s.mutes(t, G, T0 + 21).await.unwrap(), vec![everyone, c.clone()]);
    assert!(s.unmute(t, G, None).await.unwrap(), "the mute of everyone");
    assert!(!s.unmute(t, G, None).await.unwrap());
    assert!(!s.unmute(t, H, Some(C)).await.unwrap(), "another group's mute");
    assert_eq!(s.mutes(t, G, T0 + 22).await.unwrap(), vec![c]);
}

/// A mute holds strictly before its end: at the end itself it has passed and is no longer listed.
pub async fn group_mute_expires<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.mute(t, G, Some(B), A, None, Some(T0 + 50), T0).await.unwrap();
    s.mute(t, G, None, A, None, Some(T0 + 60), T0).await.unwrap();
    s.mute(t, G, Some(C), A, None, None, T0).await.unwrap();
    let users = |ms: Vec<Mute>| ms.into_iter().map(|m| m.user).collect::<Vec<_>>();
    assert_eq!(users(s.mutes(t, G, T0 + 49).await.unwrap()), vec![None, Some(B), Some(C)]);
    assert_eq!(users(s.mutes(t, G, T0 + 50).await.unwrap()), vec![None, Some(C)], "an end equal to now has passed");
    assert_eq!(users(s.mutes(t, G, T0 + 60).await.unwrap()), vec![Some(C)]);
    for now in [T0 + 49, T0 + 50, T0 + 60, T0 + 1_000_000] {
        assert!(s.mutes(t, G, now).await.unwrap().iter().all(|m| m.active(now)), "only active mutes at {now}");
    }
    s.mute(t, G, Some(B), A, None, Some(T0 + 200), T0 + 70).await.unwrap();
    let again = s.mutes(t, G, T0 + 70).await.unwrap();
    assert_eq!(users(again.clone()), vec![Some(B), Some(C)], "a new mute replaces the one that ended");
    assert_eq!((again[0].until, again[0].updated), (Some(T0 + 200), T0 + 70));
}

/// A member who leaves loses their role and mute; the owner keeps the role, and the mute of everyone stays.
pub async fn group_forget_member_keeps_owner<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    s.set_role(t, G, B, GroupRole::Admin, A, None, T0 + 1).await.unwrap();
    s.set_role(t, G, C, GroupRole::Admin, A, None, T0 + 1).await.unwrap();
    for user in [Some(A), Some(B), Some(C), None] {
        s.mute(t, G, user, A, None, None, T0 + 2).await.unwrap();
    }
    s.set_role(t, H, B, GroupRole::Admin, A, None, T0 + 3).await.unwrap();
    s.mute(t, H, Some(B), A, None, None, T0 + 3).await.unwrap();

    s.forget_member(t, G, B).await.unwrap();
    let roles: Vec<_> = s.roles(t, G).await.unwrap().into_iter().map(|r| r.user).collect();
    assert_eq!(roles, vec![A, C]);
    let mutes: Vec<_> = s.mutes(t, G, T0 + 3).await.unwrap().into_iter().map(|m| m.user).collect();
    assert_eq!(mutes, vec![None, Some(A), Some(C)]);
    s.forget_member(t, G, A).await.unwrap();
    assert_eq!(s.roles(t, G).await.unwrap()[0], grant(A, GroupRole::Owner, None, T0), "the owner stays");
    let mutes: Vec<_> = s.mutes(t, G, T0 + 3).await.unwrap().into_iter().map(|m| m.user).collect();
    assert_eq!(mutes, vec![None, Some(C)], "the owner's mute went, everyone's stayed");
    s.forget_member(t, G, D).await.unwrap();
    assert_eq!(s.roles(t, H).await.unwrap().len(), 1, "another group remembers them");
    assert_eq!(s.mutes(t, H, T0 + 3).await.unwrap().len(), 1);
}

/// A group without stored settings has the defaults, whatever else was stored for it; stored settings round
/// trip with the time they were stored.
pub async fn group_settings_default_then_stored<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let defaults = GroupSettings { join_policy: JoinPolicy::Approval, members_invite: false, updated: 0 };
    assert_eq!(s.settings(t, G).await.unwrap(), defaults);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    s.set_role(t, G, B, GroupRole::Admin, A, Some(3), T0).await.unwrap();
    assert_eq!(s.settings(t, G).await.unwrap(), defaults, "roles store no settings");

    let open = GroupSettings { join_policy: JoinPolicy::Open, members_invite: true, updated: 999 };
    s.set_settings(t, G, &open, T0 + 5).await.unwrap();
    assert_eq!(s.settings(t, G).await.unwrap(), GroupSettings { updated: T0 + 5, ..open });
    s.set_role(t, G, C, GroupRole::Admin, A, Some(3), T0 + 6).await.unwrap();
    s.transfer_owner(t, G, A, C, T0 + 7).await.unwrap();
    assert_eq!(s.settings(t, G).await.unwrap().updated, T0 + 5, "role changes leave the settings alone");
    let closed = GroupSettings { join_policy: JoinPolicy::Closed, members_invite: false, updated: 0 };
    s.set_settings(t, G, &closed, T0 + 8).await.unwrap();
    assert_eq!(s.settings(t, G).await.unwrap(), GroupSettings { updated: T0 + 8, ..closed });
    assert_eq!(s.settings(t, H).await.unwrap(), defaults, "settings belong to their group");
}

/// Nothing one tenant stores for a group is visible to, or changeable from, another tenant with the same group.
pub async fn group_tenants_are_isolated<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t, o) = (&fx.store, fx.tenant, fx.other_tenant);
    s.ensure_owner(t, G, A, T0).await.unwrap();
    s.set_role(t, G, B, GroupRole::Admin, A, None, T0).await.unwrap();
    s.mute(t, G, Some(C), A, None, None, T0).await.unwrap();
    s.mute(t, G, None, A, None, None, T0).await.unwrap();
    let open = GroupSettings { join_policy: JoinPolicy::Open, members_invite: true, updated: 0 };
    s.set_settings(t, G, &open, T0).await.unwrap();
    let JoinOutcome::Created(request) = s.create_join_request(t, G, D, None, None, T0).await.unwrap() else {
        panic!("a new request");
    };
    let draft = AnnouncementDraft { title: None, content: json!("hello"), pinned: false };
    let note = s.add_announcement(t, G, A, &draft, T0).await.unwrap();

    assert!(s.roles(o, G).await.unwrap().is_empty());
    assert!(s.mutes(o, G, T0).await.unwrap().is_empty());
    assert_eq!(s.settings(o, G).await.unwrap(), GroupSettings::default());
    assert_eq!(s.pending_join_request(o, G, D).await.unwrap(), None);
    assert!(s.list_join_requests(o, G, None, None, 10).await.unwrap().is_empty());
    assert!(s.list_announcements(o, G, A, 10).await.unwrap().is_empty());
    assert_not_found(s.decide_join_request(o, G, request.id, A, JoinDecision::Approve, T0).await, "a request");
    assert_not_found(s.update_announcement(o, G, note.id, &draft, T0).await, "an announcement");
    assert_not_found(s.mark_announcement_read(o, G, note.id, B, T0).await, "a read mark");
    assert!(!s.delete_announcement(o, G, note.id, T0).await.unwrap());
    assert!(!s.unmute(o, G, Some(C)).await.unwrap());
    s.forget_member(o, G, B).await.unwrap();

    assert!(s.ensure_owner(o, G, D, T0).await.unwrap(), "the other tenant's group has its own owner");
    assert!(matches!(s.create_join_request(o, G, D, None, None, T0).await.unwrap(), JoinOutcome::Created(_)));
    let roles: Vec<_> = s.roles(t, G).await.unwrap().into_iter().map(|r| r.user).collect();
    assert_eq!(roles, vec![A, B], "the first tenant's roles are untouched");
    assert_eq!(s.mutes(t, G, T0).await.unwrap().len(), 2);
    assert_eq!(s.settings(t, G).await.unwrap().join_policy, JoinPolicy::Open);
    let pending = s.pending_join_request(t, G, D).await.unwrap().map(|r| r.status);
    assert_eq!(pending, Some(RequestStatus::Pending));
    assert_eq!(s.list_announcements(t, G, A, 10).await.unwrap().len(), 1);
}
