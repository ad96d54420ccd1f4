//! Contract cases for the user port: accounts, credentials and tag search.

use super::{assert_conflict, assert_not_found};
use crate::data::{T0, auth, tagged_user, tags, user};
use crate::{Fixture, Storage};
use palaver_core::ports::Identity;
use palaver_core::{AccessMode, DefaultAccess, RecordState, User, UserId, UserUpdate};
use serde_json::{Value, json};

/// A created user reads back unchanged; updates change only the fields they name; touch records last-seen.
pub async fn user_create_get_update<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let mut u = tagged_user(10, &["alpha", "beta"]);
    u.trusted = Some(json!({ "verified": true }));
    s.create_user(t, &u, None).await.unwrap();
    assert_eq!(s.get_user(t, u.id).await.unwrap(), Some(u.clone()));
    assert_eq!(s.get_user(t, UserId(11)).await.unwrap(), None);

    let defacs = DefaultAccess { auth: AccessMode::GROUP_AUTH, anon: AccessMode::READ };
    let update = UserUpdate {
        updated: T0 + 5,
        public: Some(Value::Null),
        trusted: None,
        tags: Some(vec!["gamma".into()]),
        defacs: Some(defacs),
    };
    s.update_user(t, u.id, &update).await.unwrap();
    let got = s.get_user(t, u.id).await.unwrap().unwrap();
    let expected = User { updated: T0 + 5, public: None, tags: vec!["gamma".into()], defacs, ..u.clone() };
    assert_eq!(got, expected, "Null clears public, None leaves trusted alone");

    let update = UserUpdate { updated: T0 + 6, public: Some(json!({ "fn": "New" })), ..UserUpdate::default() };
    s.update_user(t, u.id, &update).await.unwrap();
    let got = s.get_user(t, u.id).await.unwrap().unwrap();
    assert_eq!(got.public, Some(json!({ "fn": "New" })));
    assert_eq!(got.tags, vec!["gamma".to_owned()], "tags left alone when not named");
    assert_eq!(got.trusted, u.trusted);

    s.touch_user(t, u.id, T0 + 100, Some("tinode-js/1.0")).await.unwrap();
    let got = s.get_user(t, u.id).await.unwrap().unwrap();
    assert_eq!((got.last_seen, got.user_agent.as_deref()), (Some(T0 + 100), Some("tinode-js/1.0")));

    assert_not_found(s.update_user(t, UserId(11), &update).await, "update of a missing user");
}

/// An external id names one account: found again, shown with the login, never reused, and a refused creation
/// leaves neither the user nor its credential behind.
pub async fn external_identity_names_one_account<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_external_user(t, &user(10), Some(&auth(10, "Alice", "h1")), "crm-7").await.unwrap();
    s.create_external_user(t, &user(11), None, "crm-8").await.unwrap();
    assert_eq!(s.find_external(t, "crm-7").await.unwrap(), Some(UserId(10)));
    assert_eq!(s.find_external(t, "crm-8").await.unwrap(), Some(UserId(11)));
    assert_eq!(s.find_external(t, "CRM-7").await.unwrap(), None, "external ids compare exactly");
    assert_eq!(s.get_user(t, UserId(11)).await.unwrap(), Some(user(11)));
    let alice = s.identity_of(t, UserId(10)).await.unwrap();
    assert_eq!((alice.login.as_deref(), alice.external_id.as_deref()), (Some("alice"), Some("crm-7")));
    let bare = s.identity_of(t, UserId(11)).await.unwrap();
    assert_eq!((bare.login, bare.external_id.as_deref()), (None, Some("crm-8")));
    assert_eq!(s.identity_of(t, UserId(12)).await.unwrap(), Identity::default(), "no such user: nothing");

    assert_conflict(s.create_external_user(t, &user(12), Some(&auth(12, "carol", "h")), "crm-7").await, "taken id");
    assert_eq!(s.get_user(t, UserId(12)).await.unwrap(), None, "the refused user is not created");
    assert_eq!(s.find_auth(t, "carol").await.unwrap(), None, "nor its credential");
    assert_conflict(s.create_external_user(t, &user(12), Some(&auth(12, "alice", "h")), "crm-9").await, "login");
    assert_eq!(s.find_external(t, "crm-9").await.unwrap(), None, "the external id of a refused user is free");
    s.create_user(t, &user(13), None).await.unwrap();
    assert_eq!(s.identity_of(t, UserId(13)).await.unwrap(), Identity::default());
    assert_eq!(s.find_external(fx.other_tenant, "crm-7").await.unwrap(), None, "external ids are per tenant");

    s.create_external_user(fx.other_tenant, &user(20), None, "crm-7").await.unwrap();
    assert_eq!(s.find_external(t, "crm-7").await.unwrap(), Some(UserId(10)), "and another tenant's is its own");
    // A deleted account's login and external id are forgotten and free again; its row stays.
    s.forget_identities(t, UserId(10)).await.unwrap();
    assert_eq!(s.identity_of(t, UserId(10)).await.unwrap(), Identity::default());
    assert_eq!((s.find_external(t, "crm-7").await.unwrap(), s.find_auth(t, "alice").await.unwrap()), (None, None));
    assert!(s.get_user(t, UserId(10)).await.unwrap().is_some(), "the account itself stays");
    s.forget_identities(t, UserId(10)).await.unwrap();
    s.create_external_user(t, &user(14), Some(&auth(14, "alice", "h")), "crm-7").await.unwrap();
    let deleted = User { state: RecordState::Deleted, ..user(15) };
    s.create_user(t, &deleted, None).await.unwrap();
    assert_eq!(s.get_user(t, UserId(15)).await.unwrap().unwrap().state, RecordState::Deleted);
}

/// Creating a user whose id exists is a conflict.
pub async fn user_duplicate_id_conflicts<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), None).await.unwrap();
    assert_conflict(s.create_user(t, &user(10), None).await, "same user id");
}

/// A taken login is a conflict, whatever its case, and the refused user is not created.
pub async fn login_taken_conflicts<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), Some(&auth(10, "alice", "h1"))).await.unwrap();
    assert_conflict(s.create_user(t, &user(11), Some(&auth(11, "alice", "h2"))).await, "same login");
    assert_eq!(s.get_user(t, UserId(11)).await.unwrap(), None, "user and credential are created atomically");
    assert_eq!(s.find_auth(t, "alice").await.unwrap().unwrap().user, UserId(10));
    s.create_user(t, &user(11), Some(&auth(11, "bob", "h2"))).await.unwrap();
}

/// Logins are matched lower-cased.
pub async fn find_auth_ignores_case<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), Some(&auth(10, "alice", "$argon2id$h1"))).await.unwrap();
    let expected = auth(10, "alice", "$argon2id$h1");
    assert_eq!(s.find_auth(t, "alice").await.unwrap(), Some(expected.clone()));
    assert_eq!(s.find_auth(t, "ALICE").await.unwrap(), Some(expected.clone()));
    assert_eq!(s.find_auth(t, "AlIcE").await.unwrap(), Some(expected));
    assert_eq!(s.find_auth(t, "bob").await.unwrap(), None);
}

/// Logins are keyed in their normal form (NFKC, lower case): a fullwidth or decomposed spelling of a taken
/// login is the same login, both to sign up and to log in.
pub async fn find_auth_folds_look_alikes<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), Some(&auth(10, "\u{FF21}lice", "$argon2id$h1"))).await.unwrap();
    assert_eq!(s.find_auth(t, "alice").await.unwrap().map(|a| a.user), Some(UserId(10)));
    assert_eq!(s.find_auth(t, "\u{FF41}LICE").await.unwrap().map(|a| a.user), Some(UserId(10)));
    assert_conflict(s.create_user(t, &user(11), Some(&auth(11, "ALICE", "h2"))).await, "same login, other width");
    s.create_user(t, &user(12), Some(&auth(12, "jos\u{e9}", "h3"))).await.unwrap();
    assert_eq!(s.find_auth(t, "Jose\u{301}").await.unwrap().map(|a| a.user), Some(UserId(12)));
}

/// Changing the secret replaces the hash and bumps the auth version each time.
pub async fn set_secret_bumps_auth_version<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), Some(&auth(10, "alice", "h1"))).await.unwrap();
    assert_eq!(s.set_secret(t, UserId(10), "h2", &[]).await.unwrap(), 1);
    assert_eq!(s.set_secret(t, UserId(10), "h3", &[]).await.unwrap(), 2);
    assert_eq!(s.get_user(t, UserId(10)).await.unwrap().unwrap().auth_version, 2);
    assert_eq!(s.find_auth(t, "alice").await.unwrap().unwrap().secret_hash, "h3");

    s.create_user(t, &user(11), None).await.unwrap();
    assert_not_found(s.set_secret(t, UserId(11), "h", &[]).await, "user without a credential");
    assert_not_found(s.set_secret(t, UserId(12), "h", &[]).await, "missing user");
}

/// Tag search finds active users having any of the tags, up to the limit, in a stable order.
pub async fn user_tag_search<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &tagged_user(10, &["rust", "go"]), None).await.unwrap();
    s.create_user(t, &tagged_user(11, &["go"]), None).await.unwrap();
    s.create_user(t, &tagged_user(12, &["python"]), None).await.unwrap();
    let suspended = User { state: RecordState::Suspended, ..tagged_user(13, &["rust"]) };
    s.create_user(t, &suspended, None).await.unwrap();

    let ids = |users: Vec<User>| users.into_iter().map(|u| u.id.0).collect::<Vec<_>>();
    let mut found = ids(s.find_users_by_tags(t, &tags(&["rust", "go"]), 10).await.unwrap());
    let first = found.clone();
    found.sort();
    assert_eq!(found, vec![10, 11], "each match once, suspended users left out");
    assert_eq!(ids(s.find_users_by_tags(t, &tags(&["rust", "go"]), 10).await.unwrap()), first, "stable order");
    assert_eq!(s.find_users_by_tags(t, &tags(&["rust", "go"]), 1).await.unwrap().len(), 1);
    assert_eq!(ids(s.find_users_by_tags(t, &tags(&["python"]), 10).await.unwrap()), vec![12]);
    assert!(s.find_users_by_tags(t, &tags(&["cobol"]), 10).await.unwrap().is_empty());

    // Replacing tags must replace what the search sees, not only the stored list.
    let update = UserUpdate { updated: T0 + 1, tags: Some(tags(&["cobol"])), ..UserUpdate::default() };
    s.update_user(t, UserId(12), &update).await.unwrap();
    assert!(s.find_users_by_tags(t, &tags(&["python"]), 10).await.unwrap().is_empty());
    assert_eq!(ids(s.find_users_by_tags(t, &tags(&["cobol"]), 10).await.unwrap()), vec![12]);
}
