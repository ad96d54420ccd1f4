//! The user tables' shared parts beyond the `users` row ([`UserRow`](crate::rows::UserRow)): the credential and
//! identity rows, and the columns of a new user's credential and external id (bound after SQLite's `tenant_id`).

use crate::columns::{user_col, user_of};
use palaver_core::ports::Identity;
use palaver_core::{AuthRecord, UnixMillis, User, normalize_login};

/// An `auth` row: `login, user_id, secret_hash`.
pub type AuthRow = (String, i64, String);

/// The credential an `auth` row holds.
pub fn auth_of((login, user, secret_hash): AuthRow) -> AuthRecord {
    AuthRecord { user: user_of(user), login, secret_hash }
}

/// The columns a new user's credential is inserted with: `login, user_id, secret_hash`. The login is normalised
/// as every lookup normalises it, and the id is always the new user's, so the credential cannot attach to another
/// account.
pub fn auth_cols<'a>(user: &User, auth: &'a AuthRecord) -> (String, i64, &'a str) {
    (normalize_login(&auth.login), user_col(user.id), &auth.secret_hash)
}

/// The columns a new user's external id is inserted with: `external_id, user_id, created_at`.
pub fn external_cols<'a>(user: &User, external_id: &'a str) -> (&'a str, i64, UnixMillis) {
    (external_id, user_col(user.id), user.created)
}

/// A user's identity as selected: `login, external_id`, each NULL when the user has none.
pub type IdentityRow = (Option<String>, Option<String>);

/// The identity a row holds.
pub fn identity_of((login, external_id): IdentityRow) -> Identity {
    Identity { login, external_id }
}
