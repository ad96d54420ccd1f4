//! Contact credentials (Tinode's `cred`: an email address or a phone number an account proves it owns), the
//! one-time codes that confirm one or reset a password, and the senders that deliver those codes.
//!
//! The credential rows live in the tenant's database, the final authority. The codes are short state: in Redis
//! when the node has it (`verify:code:*`, `verify:limit:*`), in process otherwise. Nothing here keeps an address
//! or a code in clear outside the credential row itself: code keys are digests and codes are stored hashed.

use crate::{StoreResult, TenantId, UnixMillis, UserId};

/// One credential of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// `email` or `tel`.
    pub method: String,
    /// The normalised address: a lower-cased email address, a phone number as `+` and digits.
    pub value: String,
    /// Confirmed with a code.
    pub done: bool,
    pub created: UnixMillis,
}

/// What adding a credential did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// A new unconfirmed credential.
    New,
    /// The account already had it, confirmed or not; nothing changed.
    Known { done: bool },
}

/// The accounts' credentials, in the tenant's database. A confirmed `(method, value)` belongs to one account of
/// the tenant; unconfirmed ones may be claimed by several until one of them confirms.
#[async_trait::async_trait]
pub trait CredentialStore: Send + Sync {
    /// Adds an unconfirmed credential to `user`. `Conflict` if another account confirmed it, or if `user`
    /// already has `max` credentials; nothing is written then.
    async fn add_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
        max: usize,
    ) -> StoreResult<Added>;

    /// Marks the user's credential confirmed. `NotFound` if the user does not have it; `Conflict` if another
    /// account confirmed the same credential first (decided in the same write). Confirming a confirmed one is
    /// no error.
    async fn confirm_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
    ) -> StoreResult<()>;

    /// The user's credentials, ordered by method, then value.
    async fn credentials_of(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Credential>>;

    /// Removes one of the user's credentials; `false` if it had no such credential.
    async fn delete_credential(&self, tenant: TenantId, user: UserId, method: &str, value: &str) -> StoreResult<bool>;

    /// The account that confirmed `(method, value)`, or `None` (unconfirmed claims do not count).
    async fn find_by_credential(&self, tenant: TenantId, method: &str, value: &str) -> StoreResult<Option<UserId>>;

    /// Removes every credential of the user (a deleted account's addresses may be claimed again).
    async fn forget_credentials(&self, tenant: TenantId, user: UserId) -> StoreResult<()>;
}

/// What storing a new code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// Stored, replacing any earlier code under the same key; its attempts start again.
    Stored,
    /// The limit key has had its sends for this hour; nothing was stored.
    Limited { retry_after_ms: u64 },
}

/// What checking a code found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redeemed {
    /// The code matched and is consumed: a second redeem finds nothing.
    Accepted,
    /// The code did not match; `attempts_left` more tries before the code is void.
    Wrong { attempts_left: u32 },
    /// No live code under the key: never issued, expired, consumed, or its attempts used up.
    Missing,
}

/// One-time codes, short state shared by the nodes. Keys are digests the caller builds (`code_key` from the
/// purpose, the account and the address; `limit_key` from the purpose and the address), so an adapter never
/// sees an address. `code_hash` is a digest of the code and its key.
#[async_trait::async_trait]
pub trait CodeStore: Send + Sync {
    /// Counts one send under `limit_key` in its hour window; within `per_hour`, stores `code_hash` under
    /// `code_key` for `ttl_ms`, with no attempts used. Both happen in one step.
    async fn issue(
        &self,
        tenant: TenantId,
        code_key: &str,
        limit_key: &str,
        code_hash: &str,
        ttl_ms: u64,
        per_hour: u32,
    ) -> StoreResult<Issued>;

    /// Checks `code_hash` against the live code under `code_key`, in one step: a match consumes the code; a
    /// miss uses one of `max_attempts` tries, and the last miss voids the code.
    async fn redeem(
        &self,
        tenant: TenantId,
        code_key: &str,
        code_hash: &str,
        max_attempts: u32,
    ) -> StoreResult<Redeemed>;
}

/// Why a code is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePurpose {
    /// Confirm a credential the account added.
    Confirm,
    /// Reset the account's password.
    Reset,
}

/// A code on its way to an address. Its `Debug` leaves out the address and the code.
#[derive(Clone)]
pub struct CodeMessage<'a> {
    pub tenant: TenantId,
    /// `email` or `tel`.
    pub method: &'a str,
    /// The address, normalised.
    pub to: &'a str,
    pub code: &'a str,
    pub purpose: CodePurpose,
    /// How long the code stays valid, in whole minutes, for the text.
    pub valid_minutes: u64,
    /// The client's language (`{hi lang}`), if it gave one.
    pub lang: Option<&'a str>,
}

impl std::fmt::Debug for CodeMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeMessage")
            .field("tenant", &self.tenant)
            .field("method", &self.method)
            .field("purpose", &self.purpose)
            .field("valid_minutes", &self.valid_minutes)
            .field("lang", &self.lang)
            .finish_non_exhaustive()
    }
}

/// Why a code could not be sent.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SendError {
    /// The provider refused the address itself (malformed, not deliverable): the client's input is wrong.
    #[error("address refused: {0}")]
    Refused(String),
    /// The provider is unreachable or failed; a later try may succeed.
    #[error("sender unavailable: {0}")]
    Unavailable(String),
}

/// Delivers codes for one method: SMTP for `email`, an SMS provider's webhook for `tel`.
#[async_trait::async_trait]
pub trait CodeSender: Send + Sync {
    async fn send(&self, msg: &CodeMessage<'_>) -> Result<(), SendError>;
}
