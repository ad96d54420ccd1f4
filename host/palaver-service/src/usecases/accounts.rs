//! Accounts: sign-up under a login that names one account (or an app backend's external id), password changes
//! that revoke every older token, the basic and token schemes behind the failed-login throttle, the account a
//! backend's JWT names, and profile changes.

use crate::auth::{HashError, TokenClaims};
use crate::error::{ServiceError, ServiceResult};
use crate::throttle::LoginKey;
use crate::{Inner, now_millis};
use palaver_core::ports::{AccountChange, AuditEvent, Backoff, ControlScope, GateVerdict, LoginContext};
use palaver_core::{AuthRecord, DefaultAccess, SessionId, StoreError, TenantId, User, UserId, UserUpdate};
use palaver_proto::Code;
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
    pub(crate) async fn create(&self, user: User, login: &str, password: String) -> ServiceResult<User> {
        self.create_with(user, Some((login, password)), None, false).await
    }

    /// Stores a new account for `user` (its id is chosen here) with, as given, the basic credential
    /// `login:password` and the external id an app backend knows it by; `by_operator` when an operator creates
    /// it rather than the user signing up. `DuplicateCredential` when the login or the external id names another
    /// account.
    pub(crate) async fn create_with(
        &self,
        mut user: User,
        basic: Option<(&str, String)>,
        external: Option<&str>,
        by_operator: bool,
    ) -> ServiceResult<User> {
        let tenant = self.tenant;
        let users = &self.svc.ports.users;
        let record = match basic {
            Some((login, password)) => Some((login, self.svc.hasher.hash(password).await.map_err(internal)?)),
            None => None,
        };
        // Random ids avoid a central counter; a collision is astronomically rare but still handled.
        for _ in 0..4 {
            user.id = UserId(rand::random::<u64>().max(1));
            let auth = record.as_ref().map(|(login, hash)| AuthRecord {
                user: user.id,
                login: (*login).to_owned(),
                secret_hash: hash.clone(),
            });
            let created = match external {
                Some(external) => users.create_external_user(tenant, &user, auth.as_ref(), external).await,
                None => users.create_user(tenant, &user, auth.as_ref()).await,
            };
            match created {
                Ok(()) => {
                    let actor = (!by_operator).then_some(user.id);
                    self.svc.account_changed(tenant, user.id, actor, AccountChange::Created).await;
                    return Ok(user);
                }
                Err(StoreError::Conflict(_)) => {
                    let login_taken = match &record {
                        Some((login, _)) => users.find_auth(tenant, login).await?.is_some(),
                        None => false,
                    };
                    let external_taken = match external {
                        Some(external) => users.find_external(tenant, external).await?.is_some(),
                        None => false,
                    };
                    if login_taken || external_taken {
                        return Err(ServiceError::DuplicateCredential);
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ServiceError::Internal("could not allocate a user id".into()))
    }

    /// Sets `user`'s password. The new password revokes every older token and closes the user's other sessions
    /// on every node; `keep` (the session that changed it) stays. `audit` commits with the new secret, in its
    /// transaction. Returns the new `auth_version`.
    pub(crate) async fn set_password(
        &self,
        user: UserId,
        password: String,
        keep: Option<SessionId>,
        audit: &AuditEvent,
    ) -> ServiceResult<i64> {
        let tenant = self.tenant;
        let hash = self.svc.hasher.hash(password).await.map_err(internal)?;
        let owed = [crate::backbone::audit_record(audit)];
        let version = self.svc.ports.users.set_secret(tenant, user, &hash, self.svc.owed(tenant, &owed)).await?;
        self.svc.owed_written();
        if let Err(e) = self.svc.control(tenant, user, ControlScope::User, "password changed", keep).await {
            // The tokens are revoked regardless; sessions still open are closed by their next check.
            tracing::warn!(error = %e, "could not close the user's other sessions");
        }
        Ok(version)
    }

    /// A login token for `user`, valid `ttl_secs` from now and void once the account's `auth_version` moves past
    /// `auth_version`. Returns the token and when it expires.
    pub(crate) fn mint_token(&self, user: UserId, auth_version: i64, ttl_secs: u64) -> (String, i64) {
        let expires = now_millis() + i64::try_from(ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
        let claims = TokenClaims { tenant: self.tenant, user, expires, auth_version };
        (self.svc.signer.mint(&claims), expires)
    }

    /// Changes the user's own profile, tags or default access.
    pub(crate) async fn update_profile(&self, user: UserId, update: &UserUpdate) -> ServiceResult<()> {
        self.svc.ports.users.update_user(self.tenant, user, update).await?;
        self.svc.account_changed(self.tenant, user, Some(user), AccountChange::Updated).await;
        Ok(())
    }

    /// Asks the login gates (plugins' `on-login`) whether `login` may complete; `Rejected` with the gate's code
    /// and reason when one refuses. Nothing is asked while no gate runs for the tenant.
    pub(crate) async fn admit_login(&self, login: &LoginContext) -> ServiceResult<()> {
        let gates = &self.svc.ports.gates;
        if !gates.gates_login(self.tenant) {
            return Ok(());
        }
        match gates.on_login(login).await {
            GateVerdict::Allow | GateVerdict::Restrict { .. } => Ok(()),
            GateVerdict::Reject { code, reason } => {
                tracing::info!(tenant = %self.tenant, user = %login.user, %reason, "login refused by a plugin");
                Err(ServiceError::Rejected { code: Code::from_number(code), reason })
            }
        }
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

    /// The account a backend token names (`{login scheme:"jwt"}`, see [`crate::jwt`]): the one whose external id
    /// is the token's `sub`, or, when the key allows provisioning, a new one (public `fn` from the token's
    /// `name`, default access as a sign-up's). `UnknownScheme` when the tenant takes no backend tokens,
    /// `AuthFailed` for any refused token or an unknown `sub` without provisioning. The state is the caller's.
    pub(crate) async fn user_of_jwt(&self, token: &str, user_agent: Option<String>) -> ServiceResult<User> {
        let keys = &self.svc.cfg.jwt;
        if !keys.accepts(self.tenant) {
            return Err(ServiceError::UnknownScheme);
        }
        let now = u64::try_from(now_millis() / 1000).unwrap_or(0);
        let identity = keys.verify(self.tenant, token, now).map_err(|e| {
            tracing::info!(tenant = %self.tenant, reason = %e, "backend token refused");
            ServiceError::AuthFailed
        })?;
        let users = &self.svc.ports.users;
        if let Some(id) = users.find_external(self.tenant, &identity.subject).await? {
            return users.get_user(self.tenant, id).await?.ok_or(ServiceError::AuthFailed);
        }
        if !identity.auto_provision {
            tracing::info!(tenant = %self.tenant, "backend token names no account and the key does not provision");
            return Err(ServiceError::AuthFailed);
        }
        let public = identity.name.map(|name| serde_json::json!({ "fn": name }));
        let user = User { public, user_agent, ..User::new_active(now_millis(), DefaultAccess::USER) };
        match self.create_with(user, None, Some(&identity.subject), false).await {
            Ok(user) => {
                let detail = serde_json::json!({ "external_id": identity.subject, "via": "jwt" });
                let target = ("user", user.id.to_string());
                self.svc
                    .audit_action(self.tenant, "user.create", ("system", None), target, |e| e.with_detail(detail))
                    .await;
                Ok(user)
            }
            // Two first logins of one subject at once: the other created it.
            Err(ServiceError::DuplicateCredential) => {
                let id = users.find_external(self.tenant, &identity.subject).await?.ok_or(ServiceError::AuthFailed)?;
                users.get_user(self.tenant, id).await?.ok_or(ServiceError::AuthFailed)
            }
            Err(e) => Err(e),
        }
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

    /// Counts a login refused after its password matched (a login gate said no) as a failed one.
    pub(crate) async fn count_failed_login(&self, keys: &[LoginKey]) {
        self.login_failed(keys).await;
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

/// Tags as stored: trimmed, lower case, sorted, without repeats; refused beyond the configured count or length.
pub(crate) fn check_tags(cfg: &crate::ServiceConfig, tags: &[String]) -> ServiceResult<Vec<String>> {
    if tags.len() > cfg.max_tag_count {
        return Err(ServiceError::Malformed(format!("at most {} tags", cfg.max_tag_count)));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let t = t.trim().to_lowercase();
        let n = t.chars().count();
        if n < cfg.min_tag_length || n > cfg.max_tag_length {
            return Err(ServiceError::Malformed(format!(
                "tags must be {}–{} characters",
                cfg.min_tag_length, cfg.max_tag_length
            )));
        }
        out.push(t);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

const MIN_LOGIN: usize = 2;
const MAX_LOGIN: usize = 32;
pub(crate) const MIN_PASSWORD: usize = 3;
/// The longest password taken, in bytes (hashing cost is per byte).
pub(crate) const MAX_PASSWORD: usize = 1024;

/// A login Tinode clients can type (2–32 letters, digits or `_.@-+`) and a password of at least 3 characters.
pub(crate) fn validate_login(login: &str, password: &str) -> ServiceResult<()> {
    let ok_chars = login.chars().all(|c| c.is_alphanumeric() || "_.@-+".contains(c));
    if login.chars().count() < MIN_LOGIN || login.chars().count() > MAX_LOGIN || !ok_chars {
        return Err(ServiceError::Policy(format!("login must be {MIN_LOGIN}–{MAX_LOGIN} letters, digits or _.@-+")));
    }
    validate_password(password)
}

/// A password of at least 3 characters and at most 1024 bytes.
pub(crate) fn validate_password(password: &str) -> ServiceResult<()> {
    if password.chars().count() < MIN_PASSWORD || password.len() > MAX_PASSWORD {
        return Err(ServiceError::Policy(format!("password must be {MIN_PASSWORD}–{MAX_PASSWORD} characters")));
    }
    Ok(())
}
