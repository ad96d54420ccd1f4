//! Contract cases for the credential store (Tinode's `cred`: an email address or a phone number an account proves
//! it owns): adding, the per-account limit, confirming, the rule that a confirmed `(method, value)` belongs to one
//! account of the tenant while unconfirmed claims may be shared, removal, lookup and tenant isolation.
//! [`crate::credential_contract_tests!`] runs them against any `CredentialStore`.

use super::{assert_conflict, assert_not_found};
use crate::Fixture;
use crate::data::T0;
use palaver_core::ports::{Added, Credential, CredentialStore};
use palaver_core::{StoreError, TenantId, UnixMillis, UserId};

const A: UserId = UserId(10);
const B: UserId = UserId(11);
const C: UserId = UserId(12);

/// A generous limit, for the cases that are not about it.
const MAX: usize = 10;

fn cred(method: &str, value: &str, done: bool, created: UnixMillis) -> Credential {
    Credential { method: method.to_owned(), value: value.to_owned(), done, created }
}

/// The `(method, value, done)` of each of the user's credentials, in the listed order.
async fn held<S: CredentialStore>(s: &S, t: TenantId, u: UserId) -> Vec<(String, String, bool)> {
    let list = s.credentials_of(t, u).await.unwrap();
    list.into_iter().map(|c| (c.method, c.value, c.done)).collect()
}

fn row(method: &str, value: &str, done: bool) -> (String, String, bool) {
    (method.to_owned(), value.to_owned(), done)
}

/// A new credential is unconfirmed and listed with its creation time; adding it again is `Known` and changes
/// nothing, before and after confirming; the list is ordered by method, then value.
pub async fn credential_add_known_and_listed<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert!(s.credentials_of(t, A).await.unwrap().is_empty());
    assert_eq!(s.add_credential(t, A, "tel", "+15551234", T0, MAX).await.unwrap(), Added::New);
    assert_eq!(s.add_credential(t, A, "email", "b@example.com", T0 + 1, MAX).await.unwrap(), Added::New);
    assert_eq!(s.add_credential(t, A, "email", "a@example.com", T0 + 2, MAX).await.unwrap(), Added::New);
    assert_eq!(
        s.credentials_of(t, A).await.unwrap(),
        vec![
            cred("email", "a@example.com", false, T0 + 2),
            cred("email", "b@example.com", false, T0 + 1),
            cred("tel", "+15551234", false, T0),
        ],
        "ordered by method, then value"
    );

    let again = s.add_credential(t, A, "email", "b@example.com", T0 + 50, MAX).await.unwrap();
    assert_eq!(again, Added::Known { done: false });
    s.confirm_credential(t, A, "email", "b@example.com", T0 + 60).await.unwrap();
    let again = s.add_credential(t, A, "email", "b@example.com", T0 + 70, MAX).await.unwrap();
    assert_eq!(again, Added::Known { done: true });
    assert_eq!(
        s.credentials_of(t, A).await.unwrap(),
        vec![
            cred("email", "a@example.com", false, T0 + 2),
            cred("email", "b@example.com", true, T0 + 1),
            cred("tel", "+15551234", false, T0),
        ],
        "a repeated add keeps the first creation time; a confirmation keeps it too"
    );
    assert!(s.credentials_of(t, B).await.unwrap().is_empty(), "another account has none");
}

/// `max` counts every credential of the account, confirmed or not; one over it is `Conflict` and writes
/// nothing; a credential it already has is `Known` even at the limit; removing one makes room.
pub async fn credential_limit_counts_all<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_eq!(s.add_credential(t, A, "email", "a@example.com", T0, 2).await.unwrap(), Added::New);
    s.confirm_credential(t, A, "email", "a@example.com", T0 + 1).await.unwrap();
    assert_eq!(s.add_credential(t, A, "tel", "+15550001", T0 + 2, 2).await.unwrap(), Added::New);
    assert_conflict(s.add_credential(t, A, "tel", "+15550002", T0 + 3, 2).await, "a third credential over max 2");
    assert_eq!(held(s, t, A).await, vec![row("email", "a@example.com", true), row("tel", "+15550001", false)]);
    assert_eq!(s.add_credential(t, A, "tel", "+15550001", T0 + 4, 2).await.unwrap(), Added::Known { done: false });
    assert_eq!(s.add_credential(t, A, "email", "a@example.com", T0 + 4, 2).await.unwrap(), Added::Known { done: true });
    assert_eq!(s.add_credential(t, B, "tel", "+15550002", T0 + 5, 2).await.unwrap(), Added::New, "B has its own limit");

    assert!(s.delete_credential(t, A, "tel", "+15550001").await.unwrap());
    assert_eq!(s.add_credential(t, A, "tel", "+15550002", T0 + 6, 2).await.unwrap(), Added::New);
    assert_eq!(held(s, t, A).await, vec![row("email", "a@example.com", true), row("tel", "+15550002", false)]);
}

/// A credential another account confirmed cannot be added, and nothing is written; its owner still sees it as
/// `Known`, and a lookup finds the owner.
pub async fn credential_confirmed_by_another_conflicts<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    s.add_credential(t, A, "email", "a@example.com", T0, MAX).await.unwrap();
    s.confirm_credential(t, A, "email", "a@example.com", T0 + 1).await.unwrap();
    assert_conflict(s.add_credential(t, B, "email", "a@example.com", T0 + 2, MAX).await, "A confirmed it");
    assert!(s.credentials_of(t, B).await.unwrap().is_empty(), "the refused add wrote nothing");
    assert_eq!(
        s.add_credential(t, A, "email", "a@example.com", T0 + 3, MAX).await.unwrap(),
        Added::Known { done: true }
    );
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), Some(A));
    // Another method with the same value, or another value, is a different credential.
    assert_eq!(s.add_credential(t, B, "tel", "a@example.com", T0 + 4, MAX).await.unwrap(), Added::New);
    assert_eq!(s.add_credential(t, B, "email", "b@example.com", T0 + 5, MAX).await.unwrap(), Added::New);
}

/// Confirming: `NotFound` for a credential the account does not have (even if another account has it),
/// idempotent once confirmed, and `Conflict` for an account whose claim another account confirmed first.
pub async fn credential_confirm_not_found_conflict_idempotent<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_not_found(s.confirm_credential(t, A, "email", "a@example.com", T0).await, "A has no credential");
    s.add_credential(t, A, "email", "a@example.com", T0, MAX).await.unwrap();
    s.add_credential(t, B, "email", "a@example.com", T0 + 1, MAX).await.unwrap();
    assert_not_found(s.confirm_credential(t, A, "email", "other@example.com", T0).await, "another value");
    assert_not_found(s.confirm_credential(t, A, "tel", "a@example.com", T0).await, "another method");
    assert_not_found(s.confirm_credential(t, C, "email", "a@example.com", T0).await, "C never claimed it");

    s.confirm_credential(t, A, "email", "a@example.com", T0 + 2).await.unwrap();
    s.confirm_credential(t, A, "email", "a@example.com", T0 + 3).await.unwrap();
    assert_eq!(held(s, t, A).await, vec![row("email", "a@example.com", true)], "confirmed twice, still one row");
    assert_conflict(s.confirm_credential(t, B, "email", "a@example.com", T0 + 4).await, "A confirmed first");
    assert_eq!(held(s, t, B).await, vec![row("email", "a@example.com", false)], "B's claim stays unconfirmed");
    assert_not_found(s.confirm_credential(t, C, "email", "a@example.com", T0).await, "C still has none");
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), Some(A));
}

/// Two accounts may both claim an unconfirmed credential; the first to confirm owns it and the other's confirm
/// and add are `Conflict`; once the owner removes it, the other account may confirm its claim.
pub async fn credential_unconfirmed_claims_are_shared_until_confirmed<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_eq!(s.add_credential(t, A, "tel", "+15551234", T0, MAX).await.unwrap(), Added::New);
    assert_eq!(s.add_credential(t, B, "tel", "+15551234", T0 + 1, MAX).await.unwrap(), Added::New);
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), None, "nobody confirmed it yet");
    assert_eq!(held(s, t, A).await, vec![row("tel", "+15551234", false)]);
    assert_eq!(held(s, t, B).await, vec![row("tel", "+15551234", false)]);

    s.confirm_credential(t, B, "tel", "+15551234", T0 + 2).await.unwrap();
    assert_conflict(s.confirm_credential(t, A, "tel", "+15551234", T0 + 3).await, "B confirmed first");
    assert_conflict(s.add_credential(t, A, "tel", "+15551234", T0 + 4, MAX).await, "A's add once B confirmed");
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), Some(B));

    assert!(s.delete_credential(t, B, "tel", "+15551234").await.unwrap());
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), None);
    s.confirm_credential(t, A, "tel", "+15551234", T0 + 5).await.unwrap();
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), Some(A), "free again once removed");
}

/// A removal reports whether the account had the credential and touches no other account's claim;
/// forgetting an account removes all its credentials, confirmed or not, and frees them for others.
pub async fn credential_delete_and_forget<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    s.add_credential(t, A, "email", "a@example.com", T0, MAX).await.unwrap();
    s.add_credential(t, A, "tel", "+15551234", T0, MAX).await.unwrap();
    s.confirm_credential(t, A, "tel", "+15551234", T0 + 1).await.unwrap();
    s.add_credential(t, B, "email", "a@example.com", T0, MAX).await.unwrap();

    assert!(!s.delete_credential(t, A, "email", "nope@example.com").await.unwrap(), "no such credential");
    assert!(!s.delete_credential(t, C, "email", "a@example.com").await.unwrap(), "C never had it");
    assert!(s.delete_credential(t, A, "email", "a@example.com").await.unwrap());
    assert!(!s.delete_credential(t, A, "email", "a@example.com").await.unwrap(), "gone already");
    assert_eq!(held(s, t, B).await, vec![row("email", "a@example.com", false)], "B's claim stays");

    s.add_credential(t, A, "email", "x@example.com", T0 + 2, MAX).await.unwrap();
    s.forget_credentials(t, A).await.unwrap();
    assert!(s.credentials_of(t, A).await.unwrap().is_empty());
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), None);
    assert_eq!(held(s, t, B).await, vec![row("email", "a@example.com", false)], "other accounts are left alone");
    s.forget_credentials(t, A).await.unwrap();
    s.forget_credentials(t, C).await.unwrap();

    assert_eq!(s.add_credential(t, C, "tel", "+15551234", T0 + 3, MAX).await.unwrap(), Added::New);
    s.confirm_credential(t, C, "tel", "+15551234", T0 + 4).await.unwrap();
    assert_eq!(s.find_by_credential(t, "tel", "+15551234").await.unwrap(), Some(C), "a forgotten address is free");
}

/// A lookup finds only the account that confirmed exactly that method and value.
pub async fn credential_find_ignores_unconfirmed<S: CredentialStore>(f: Fixture<S>) {
    let (s, t) = (&f.store, f.tenant);
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), None);
    s.add_credential(t, A, "email", "a@example.com", T0, MAX).await.unwrap();
    s.add_credential(t, B, "email", "b@example.com", T0, MAX).await.unwrap();
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), None, "unconfirmed");
    s.confirm_credential(t, B, "email", "b@example.com", T0 + 1).await.unwrap();
    assert_eq!(s.find_by_credential(t, "email", "b@example.com").await.unwrap(), Some(B));
    assert_eq!(s.find_by_credential(t, "tel", "b@example.com").await.unwrap(), None, "another method");
    assert_eq!(s.find_by_credential(t, "email", "B@example.com").await.unwrap(), None, "values compare exactly");
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), None, "still unconfirmed");
}

/// Another tenant sees none of this tenant's credentials, and may claim and confirm the same ones itself.
pub async fn credential_tenants_are_isolated<S: CredentialStore>(f: Fixture<S>) {
    let (s, t, o) = (&f.store, f.tenant, f.other_tenant);
    s.add_credential(t, A, "email", "a@example.com", T0, MAX).await.unwrap();
    s.confirm_credential(t, A, "email", "a@example.com", T0 + 1).await.unwrap();
    s.add_credential(t, A, "tel", "+15551234", T0, MAX).await.unwrap();

    assert!(s.credentials_of(o, A).await.unwrap().is_empty());
    assert_eq!(s.find_by_credential(o, "email", "a@example.com").await.unwrap(), None);
    assert_not_found(s.confirm_credential(o, A, "tel", "+15551234", T0).await, "the other tenant's A has nothing");
    assert!(!s.delete_credential(o, A, "email", "a@example.com").await.unwrap());
    s.forget_credentials(o, A).await.unwrap();

    assert_eq!(s.add_credential(o, B, "email", "a@example.com", T0 + 2, 1).await.unwrap(), Added::New);
    s.confirm_credential(o, B, "email", "a@example.com", T0 + 3).await.unwrap();
    assert_eq!(s.find_by_credential(o, "email", "a@example.com").await.unwrap(), Some(B));
    assert_eq!(s.find_by_credential(t, "email", "a@example.com").await.unwrap(), Some(A));
    assert_eq!(held(s, t, A).await, vec![row("email", "a@example.com", true), row("tel", "+15551234", false)]);
    assert!(s.credentials_of(t, B).await.unwrap().is_empty());
}

/// Concurrent adds of different credentials to one account never take it past `max`.
pub async fn credential_concurrent_adds_respect_limit<S: CredentialStore + Clone + 'static>(f: Fixture<S>) {
    let t = f.tenant;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = f.store.clone();
            tokio::spawn(async move { s.add_credential(t, A, "email", &format!("u{i}@example.com"), T0 + i, 3).await })
        })
        .collect();
    let (mut added, mut refused) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Ok(Added::New) => added += 1,
            Err(StoreError::Conflict(_)) => refused += 1,
            other => panic!("expected New or Conflict, got {other:?}"),
        }
    }
    assert_eq!((added, refused), (3, 5), "exactly max adds succeed");
    assert_eq!(f.store.credentials_of(t, A).await.unwrap().len(), 3);
}

/// Of several accounts confirming the same claim at once, exactly one wins; the others get `Conflict`.
pub async fn credential_concurrent_confirms_one_wins<S: CredentialStore + Clone + 'static>(f: Fixture<S>) {
    let t = f.tenant;
    let users: Vec<UserId> = (100..108).map(UserId).collect();
    for &u in &users {
        f.store.add_credential(t, u, "email", "race@example.com", T0, MAX).await.unwrap();
    }
    let tasks: Vec<_> = users
        .iter()
        .map(|&u| {
            let s = f.store.clone();
            tokio::spawn(async move { (u, s.confirm_credential(t, u, "email", "race@example.com", T0 + 1).await) })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (u, Ok(())) => winners.push(u),
            (_, Err(StoreError::Conflict(_))) => {}
            (u, other) => panic!("{u:?}: expected Ok or Conflict, got {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one account confirms: {winners:?}");
    assert_eq!(f.store.find_by_credential(t, "email", "race@example.com").await.unwrap(), Some(winners[0]));
}
