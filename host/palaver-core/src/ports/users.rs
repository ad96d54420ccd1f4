//! The user/auth aggregate: accounts, their basic-scheme credential, their external identity (an app backend's
//! own id for the account), and tag search.

use crate::ports::QueueRecord;
use crate::{AuthRecord, RecordState, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate};

/// How an account is known besides its id: its basic-scheme login and its external id, each if it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub login: Option<String>,
    pub external_id: Option<String>,
}

/// Users and their credentials.
#[async_trait::async_trait]
pub trait UserStore: Send + Sync {
    /// Creates a user and, if given, its basic credential, atomically.
    /// `Conflict` if the id exists or the login is taken.
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()>;

    /// Creates a user bound to `external_id`, an app backend's own id for the account (unique per tenant), and
    /// if given its basic credential, atomically. `Conflict` if the id exists, the login is taken or the
    /// external id names another account; nothing is created then.
    async fn create_external_user(
        &self,
        tenant: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()>;

    /// The account an external id names, or `None`.
    async fn find_external(&self, tenant: TenantId, external_id: &str) -> StoreResult<Option<UserId>>;

    /// The external id and the login of an account, each if it has one.
    async fn identity_of(&self, tenant: TenantId, id: UserId) -> StoreResult<Identity>;

    /// Removes the account's basic credential and external id, so that neither names it any more (a deleted
    /// account's login and external id may be taken again). No error when it has neither.
    async fn forget_identities(&self, tenant: TenantId, id: UserId) -> StoreResult<()>;

    /// The user, or `None`.
    async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<User>>;

    /// Changes profile fields. `NotFound` if there is no such user.
    async fn update_user(&self, tenant: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()>;

    /// Records when and with which client the user was last seen.
    async fn touch_user(&self, tenant: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()>;

    /// The credential for a login (matched lower-cased), or `None`.
    async fn find_auth(&self, tenant: TenantId, login: &str) -> StoreResult<Option<AuthRecord>>;

    /// Replaces the user's secret hash and bumps `auth_version`, returning the new version, and appends `owed`
    /// (the change's audit event) to the tenant's outbox in the same transaction: both happen or neither does.
    /// `NotFound` (and nothing owed written) if the user has no basic credential.
    async fn set_secret(
        &self,
        tenant: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64>;

    /// Revokes every token of the user by bumping `auth_version`, optionally setting the account's state in the
    /// same write (disabling an account revokes its tokens), and appends `owed` to the tenant's outbox in that
    /// transaction. Returns the new version; `NotFound` (nothing owed written) for no user. A deleted account
    /// stays deleted: asked for another state it is `NotFound` too, decided in the same write, so an enable
    /// racing a deletion cannot bring the account back.
    async fn revoke_tokens(
        &self,
        tenant: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64>;

    /// Active users having any of `tags`, at most `limit`, in a stable order.
    async fn find_users_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>>;
}
