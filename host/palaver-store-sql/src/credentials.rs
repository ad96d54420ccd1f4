//! The credentials table's shared parts: the `claim` column that lets the unique index decide who confirmed a
//! credential, the rows both adapters select, and what an add decides from what it read under its lock.
//!
//! `credentials` holds one row per account and `(method, value)`, `done` once confirmed. Its `claim` is
//! [`CONFIRMED`] on a confirmed row and the account's own id otherwise, under a unique index on `(method, value,
//! claim)`: any number of accounts may hold an unconfirmed claim (their claims differ), but only one row per
//! credential can reach [`CONFIRMED`]. Confirming sets `claim` in the same statement that sets `done`, so the
//! second account to confirm gets a unique violation (`Conflict`) from the database itself, however the calls
//! interleave.
//!
//! Each adapter writes its own statements (SQLite scopes every one to its `tenant_id`, bound first); the binders
//! here bind the columns after that, in the order the statements name them.

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

/// Binds an account's credential: `user_id, method, value`.
#[macro_export]
macro_rules! bind_credential {
    ($query:expr, $user:expr, $method:expr, $value:expr) => {
        $query.bind($crate::columns::user_col($user)).bind($method).bind($value)
    };
}

/// Binds a new, unconfirmed credential's columns and its time: `user_id, method, value, claim, created_at,
/// updated_at`.
#[macro_export]
macro_rules! bind_new_credential {
    ($query:expr, $user:expr, $method:expr, $value:expr, $now:expr) => {{
        let (user, now) = ($user, $now);
        $crate::bind_credential!($query, user, $method, $value)
            .bind($crate::credentials::unconfirmed_claim(user))
            .bind(now)
            .bind(now)
    }};
}

/// Binds the confirmed row of a credential, whoever holds it: `method, value, claim`.
#[macro_export]
macro_rules! bind_confirmed {
    ($query:expr, $method:expr, $value:expr) => {
        $query.bind($method).bind($value).bind($crate::credentials::CONFIRMED)
    };
}

/// The error of an add or a confirm that another account's confirmation stands in the way of.
pub fn confirmed_elsewhere(method: &str) -> StoreError {
    StoreError::Conflict(format!("{method} credential confirmed by another account"))
}

/// The error of a confirming update (`SET done = 1, claim = ?`, binding [`CONFIRMED`]): a unique violation is
/// another account's confirmation of the credential.
pub fn confirm_error(err: StoreError, method: &str) -> StoreError {
    match err {
        StoreError::Conflict(_) => confirmed_elsewhere(method),
        other => other,
    }
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
        assert!(matches!(confirm_unchanged(Some(false)), Err(StoreError::NotFound)));
        assert!(matches!(confirm_unchanged(None), Err(StoreError::NotFound)));
    }

    #[test]
    fn a_unique_violation_is_a_confirmation_elsewhere() {
        let StoreError::Conflict(why) = confirm_error(StoreError::Conflict("duplicate key".into()), "email") else {
            panic!("not a conflict");
        };
        assert!(why.contains("confirmed by another account"));
        assert!(matches!(confirm_error(StoreError::NotFound, "email"), StoreError::NotFound));
    }
}
