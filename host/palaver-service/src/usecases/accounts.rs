//! Accounts: sign-up under a login that names one account, password changes that revoke every older token,
//! both login schemes behind the failed-login throttle, and profile changes.

use crate::auth::HashError;
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::LoginKey;
use crate::{Inner, now_millis};
use palaver_core::ports::{AuditEvent, Backoff, ControlScope};
use palaver_core::{AuthRecord, SessionId, StoreError, TenantId, User, UserId, UserUpdate};
use std::time::Instant;

/// The account use cases of one tenant.
pub(crate) struct Accounts<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Accounts<'_> {
    /// A login names at most one account: `DuplicateCredential` when `login` belongs to anyone but `owner`.
    pub(crate) async fn ensure_login_free(&self, login: &str, owner: Option<UserId>) -> ServiceResult<()> {
        let existing = self.svc.ports.users.find_auth(self.tenant, login).await?;
        if existing.as_ref().is_some_and(|a| owner.is_none_or(|o| a.user != o)) {
            return Err(ServiceError::DuplicateCredential);
        }
        Ok(())
    }

    /// Stores a new account for `user` (its id is chosen here) with the basic credential `login:password`.
    pub(crate) async fn create(&self, mut user: User, login: &str, password: String) -> ServiceResult<User> {
        let tenant = self.tenant;
        let hash = self.svc.hasher.hash(password).await.map_err(internal)?;
        // Random ids avoid a central counter; a collision is astronomically rare but still handled.
        let mut stored = false;
        for _ in 0..4 {
            user.id = UserId(rand::random::<u64>().max(1));
            let record = AuthRecord { user: user.id, login: login.to_owned(), secret_hash: hash.clone() };
            match self.svc.ports.users.create_user(tenant, &user, Some(&record)).await {
                Ok(()) => {
                    stored = true;
                    break;
                }
                Err(StoreError::Conflict(_)) => {
                    if self.svc.ports.users.find_auth(tenant, login).await?.is_some() {
                        return Err(ServiceError::DuplicateCredential);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !stored {
            return Err(ServiceError::Internal("could not allocate a user id".into()));
        }
        Ok(user)
    }

    /// Sets `user`'s password. The new password revokes every older token and closes the user's other sessions
    /// on every node; `keep` (the session that changed it) stays. `audit` commits with the new secret, in its
    /// transaction. Returns the new `auth_version`.
    pub(crate) async fn set_password(
        &self,
        user: UserId,
        password: String,
        keep: SessionId,
        audit: &AuditEvent,
    ) -> ServiceResult<i64> {
        let tenant = self.tenant;
        let hash = self.svc.hasher.hash(password).await.map_err(internal)?;
        let owed = [crate::backbone::audit_record(audit)];
        let version = self.svc.ports.users.set_secret(tenant, user, &hash, self.svc.owed(tenant, &owed)).await?;
        self.svc.owed_written();
        if let Err(e) = self.svc.control(tenant, user, ControlScope::User, "password changed", Some(keep)).await {
            // The tokens are revoked regardless; sessions still open are closed by their next check.
            tracing::warn!(error = %e, "could not close the user's other sessions");
        }
        Ok(version)
    }

    /// Changes the user's own profile, tags or default access.
    pub(crate) async fn update_profile(&self, user: UserId, update: &UserUpdate) -> ServiceResult<()> {
        self.svc.ports.users.update_user(self.tenant, user, update).await?;
        Ok(())
    }

    /// The stored account of `user`, if any.
    pub(crate) async fn user(&self, user: UserId) -> ServiceResult<Option<User>> {
        Ok(self.svc.ports.users.get_user(self.tenant, user).await?)
    }

    /// The account a login token belongs to: a valid signature, not expired, minted for this tenant, and of the
    /// account's current `auth_version` (a password change or revocation voids older tokens). `AuthFailed`
    /// otherwise; the account's state is the caller's to judge.
    pub(crate) async fn user_of_token(&self, token: &str) -> ServiceResult<User> {
        let claims = self.svc.signer.verify(token, now_millis()).map_err(|_| ServiceError::AuthFailed)?;
        if claims.tenant != self.tenant {
            return Err(ServiceError::AuthFailed);
        }
        let user = self.svc.ports.users.get_user(self.tenant, claims.user).await?.ok_or(ServiceError::AuthFailed)?;
        if user.auth_version != claims.auth_version {
            return Err(ServiceError::AuthFailed);
        }
        Ok(user)
    }

    /// Checks a basic credential under the failed-login throttle (`keys`: the login first, then the client's
    /// address) and returns its user. A login that does not exist (or, with `owner`, belongs to someone else)
    /// costs the same hash work as a wrong password and fails the same way, so neither the answer nor its time
    /// tells which logins exist.
    pub(crate) async fn verify_basic(
        &self,
        keys: &[LoginKey],
        login: &str,
        password: String,
        owner: Option<UserId>,
        remote: Option<&str>,
    ) -> ServiceResult<UserId> {
        self.login_backoff(keys).await.map_err(|retry_after_ms| ServiceError::LoginThrottled { retry_after_ms })?;
        let record = self.svc.ports.users.find_auth(self.tenant, login).await?;
        let record = record.filter(|r| owner.is_none_or(|o| r.user == o));
        let user = record.as_ref().map(|r| r.user);
        let ok = self.svc.hasher.verify(password, record.map(|r| r.secret_hash)).await.map_err(internal)?;
        match user {
            Some(user) if ok => {
                self.login_succeeded(&keys[0]).await;
                Ok(user)
            }
            _ => {
                self.login_failed(keys).await;
                tracing::debug!(remote = ?remote, "basic credential refused");
                Err(ServiceError::AuthFailed)
            }
        }
    }

    /// `Err(retry_after_ms)` while any of `keys` backs off: asked of the shared counters when the node has them,
    /// of this node's own when it has none or they cannot answer.
    async fn login_backoff(&self, keys: &[LoginKey]) -> Result<(), u64> {
        let tenant = self.tenant;
        if !self.svc.logins.enabled() {
            return Ok(());
        }
        if let Some(shared) = &self.svc.ports.login_failures {
            let names: Vec<String> = keys.iter().map(LoginKey::name).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let now = now_millis();
            match shared.blocked_until(tenant, &refs, now).await {
                Ok(Some(until)) => return Err(u64::try_from(until - now).unwrap_or(1).max(1)),
                Ok(None) => return Ok(()),
                Err(e) => tracing::warn!(error = %e, "shared login counters unavailable; this node's decide"),
            }
        }
        self.svc.logins.check(keys, Instant::now())
    }

    /// Counts a failed login against every key, in the shared counters and in this node's own (which stand in
    /// when the shared ones are away).
    async fn login_failed(&self, keys: &[LoginKey]) {
        let tenant = self.tenant;
        if !self.svc.logins.enabled() {
            return;
        }
        self.svc.logins.failed(keys, Instant::now());
        if let Some(shared) = &self.svc.ports.login_failures {
            let names: Vec<(String, Backoff)> = keys.iter().map(|k| (k.name(), self.svc.logins.policy(k))).collect();
            let refs: Vec<(&str, Backoff)> = names.iter().map(|(n, b)| (n.as_str(), *b)).collect();
            if let Err(e) = shared.record_failure(tenant, &refs, now_millis()).await {
                tracing::warn!(error = %e, "failed login not counted in the shared counters");
            }
        }
    }

    /// A successful login forgets its login's failures (not its address's).
    async fn login_succeeded(&self, login: &LoginKey) {
        let tenant = self.tenant;
        self.svc.logins.succeeded(login);
        if let Some(shared) = &self.svc.ports.login_failures
            && let Err(e) = shared.clear(tenant, &login.name()).await
        {
            tracing::debug!(error = %e, "shared login counter not cleared");
        }
    }
}

fn internal(e: HashError) -> ServiceError {
    ServiceError::Internal(e.to_string())
}
