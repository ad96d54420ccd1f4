//! The credentials table's shared parts: the `claim` column that lets the unique index decide who confirmed a
//! credential, the rows both adapters select, and what an add decides from what it read under its lock.
//!
//! `credentials` holds one row per account and `(method, value)`, `done` once confirmed. Its `claim` is
//! [`CONFIRMED`] on a confirmed row and the account's own id otherwise, under a unique index on `(method, value,
//! claim)`: any number of accounts may hold an unconfirmed claim (their claims differ), but only one row per
//! credential can reach [`CONFIRMED`]. Confirming sets `claim` in the same statement that sets `done`, so the
//! second account to confirm gets a unique violation (`Conflict`) from the database itself, however the calls
//! interleave.

use crate::columns::{EVERYONE, user_col};
use palaver_core::ports::{Added, Credential};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};

/// The `claim` of a confirmed row: never a user id (see [`EVERYONE`]).
pub const CONFIRMED: i64 = EVERYONE;

/// The `claim` of a row while it is unconfirmed: the account's own id.
pub fn unconfirmed_claim(user: UserId) -> i64 {
    user_col(user)
}

/// A `credentials` row as listed: `method, value, done, created_at`.
pub type CredentialRow = (String, String, bool, UnixMillis);

/// The credential a listed row holds.
pub fn credential_of((method, value, done, created): CredentialRow) -> Credential {
    Credential { method, value, done, created }
}

/// The error of an add or a confirm that another account's confirmation stands in the way of.
pub fn confirmed_elsewhere(method: &str) -> StoreError {
    StoreError::Conflict(format!("{method} credential confirmed by another account"))
}

/// What an add does, from the account's own rows (`method, value, done`, read under the write lock) and the
/// account that confirmed the credential, if any: `Err(Conflict)` if another account confirmed it or the account
/// already has `max` credentials, `Ok(Some(Known))` if the account has it already, `Ok(None)` to insert it.
pub fn decide_add(
    user: UserId,
    own: &[(String, String, bool)],
    method: &str,
    value: &str,
    confirmed_by: Option<i64>,
    max: usize,
) -> StoreResult<Option<Added>> {
    if confirmed_by.is_some_and(|owner| owner != user_col(user)) {
        return Err(confirmed_elsewhere(method));
    }
    if let Some((_, _, done)) = own.iter().find(|(m, v, _)| m == method && v == value) {
        return Ok(Some(Added::Known { done: *done }));
    }
    if own.len() >= max {
        return Err(StoreError::Conflict(format!("the account has {max} credentials already")));
    }
    Ok(None)
}

/// What a confirm that changed no row means, from the account's own row of the credential (its `done`), read
/// afterwards: already confirmed is no error; no such row is `NotFound`.
pub fn confirm_unchanged(own_done: Option<bool>) -> StoreResult<()> {
    match own_done {
        Some(true) => Ok(()),
        _ => Err(StoreError::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(list: &[(&str, &str, bool)]) -> Vec<(String, String, bool)> {
        list.iter().map(|(m, v, d)| ((*m).to_owned(), (*v).to_owned(), *d)).collect()
    }

    #[test]
    fn add_decisions() {
        let me = UserId(7);
        let own = rows(&[("email", "a@x", true), ("tel", "+1", false)]);
        assert!(matches!(decide_add(me, &own, "email", "b@x", Some(8), 9), Err(StoreError::Conflict(_))));
        assert_eq!(decide_add(me, &own, "email", "a@x", Some(7), 2).unwrap(), Some(Added::Known { done: true }));
        assert_eq!(decide_add(me, &own, "tel", "+1", None, 2).unwrap(), Some(Added::Known { done: false }));
        assert!(matches!(decide_add(me, &own, "tel", "+2", None, 2), Err(StoreError::Conflict(_))));
        assert_eq!(decide_add(me, &own, "tel", "+2", None, 3).unwrap(), None);
        assert_ne!(unconfirmed_claim(me), CONFIRMED);
    }

    #[test]
    fn unchanged_confirms() {
        assert!(confirm_unchanged(Some(true)).is_ok());
        assert!(matches!(confirm_unchanged(None), Err(StoreError::NotFound)));
    }
}
