//! What an app backend asks of accounts through the admin API: create one (with a login and password, an
//! external id, or both), find one by login or external id, mint a login token for it, revoke its tokens. Every
//! change is audited in the tenant's log; a password never is.

use super::accounts::{check_tags, validate_login};
use crate::error::{ServiceError, ServiceResult};
use crate::jwt::MAX_EXTERNAL_ID;
use crate::{Eviction, Service, now_millis};
use palaver_api::bodies::admin::{MintedToken, NewUser, TokensRevoked, UserInfo};
use palaver_core::{DefaultAccess, RecordState, TenantId, User, UserId};
use palaver_proto::Timestamp;
use serde_json::json;

/// The shortest token a backend may mint, in seconds.
const MIN_TOKEN_TTL_SECS: u64 = 60;

/// How an account is looked up.
#[derive(Debug, Clone, Copy)]
pub enum UserKey<'a> {
    Id(UserId),
    Login(&'a str),
    External(&'a str),
}

impl Service {
    /// Creates an account for an app backend (`POST /v1/admin/tenants/{t}/users`). `DuplicateCredential` when
    /// the login or external id names another account.
    pub async fn create_backend_user(&self, tenant: TenantId, req: &NewUser) -> ServiceResult<UserInfo> {
        let inner = &self.inner;
        let basic = match (&req.login, &req.password) {
            (Some(login), Some(password)) => {
                let login = palaver_core::normalize_login(login);
                validate_login(&login, password)?;
                Some((login, password.clone()))
            }
            (None, None) => None,
            _ => return Err(ServiceError::Malformed("login and password go together".into())),
        };
        let external = req.external_id.as_deref().map(str::trim);
        if let Some(e) = external
            && (e.is_empty() || e.len() > MAX_EXTERNAL_ID || e.chars().any(char::is_control))
        {
            return Err(ServiceError::Malformed(format!("external_id is 1–{MAX_EXTERNAL_ID} bytes without controls")));
        }
        if basic.is_none() && external.is_none() {
            return Err(ServiceError::Malformed("give a login and password, an external_id, or both".into()));
        }
        let tags = check_tags(&inner.cfg, req.tags.as_deref().unwrap_or_default())?;
        let public = req.public.clone().filter(|v| !v.is_null());
        let max = inner.cfg.max_desc_bytes;
        if public.as_ref().is_some_and(|p| p.to_string().len() > max) {
            return Err(ServiceError::TooLarge(format!("public is at most {max} bytes of JSON")));
        }
        let user = User { public, tags, ..User::new_active(now_millis(), DefaultAccess::USER) };
        let accounts = inner.accounts(tenant);
        let user =
            accounts.create_with(user, basic.as_ref().map(|(l, p)| (l.as_str(), p.clone())), external, true).await?;
        let info = self.user_info(tenant, user).await?;
        let detail = json!({ "login": info.login, "external_id": info.external_id });
        inner
            .audit_action(tenant, "user.create", ("admin", None), ("user", info.user.clone()), |e| {
                e.with_detail(detail)
            })
            .await;
        Ok(info)
    }

    /// An account found by id, login or external id (`GET /v1/admin/tenants/{t}/users…`); `UserNotFound`
    /// when there is none.
    pub async fn backend_user(&self, tenant: TenantId, key: UserKey<'_>) -> ServiceResult<UserInfo> {
        let users = &self.inner.ports.users;
        let id = match key {
            UserKey::Id(id) => Some(id),
            UserKey::Login(login) => users.find_auth(tenant, login).await?.map(|a| a.user),
            UserKey::External(external) => users.find_external(tenant, external).await?,
        };
        let id = id.ok_or(ServiceError::UserNotFound)?;
        let user = users.get_user(tenant, id).await?.ok_or(ServiceError::UserNotFound)?;
        self.user_info(tenant, user).await
    }

    /// A login token for an active account (`POST …/users/{u}/tokens`), valid for `ttl_secs` (60 up to the
    /// node's token lifetime, which is the default). It dies with the account's next revocation like any other.
    pub async fn mint_backend_token(
        &self,
        tenant: TenantId,
        user: UserId,
        ttl_secs: Option<u64>,
    ) -> ServiceResult<MintedToken> {
        let inner = &self.inner;
        let max = inner.cfg.token_ttl.as_secs();
        let ttl = ttl_secs.unwrap_or(max);
        if !(MIN_TOKEN_TTL_SECS..=max).contains(&ttl) {
            return Err(ServiceError::Malformed(format!("ttl_seconds is {MIN_TOKEN_TTL_SECS}–{max}")));
        }
        let account = inner.ports.users.get_user(tenant, user).await?.ok_or(ServiceError::UserNotFound)?;
        match account.state {
            RecordState::Active => {}
            RecordState::Suspended => return Err(ServiceError::PermissionDenied),
            RecordState::Deleted => return Err(ServiceError::UserNotFound),
        }
        let (token, expires) = inner.accounts(tenant).mint_token(user, account.auth_version, ttl);
        let detail = json!({ "ttl_seconds": ttl, "auth_version": account.auth_version });
        let target = ("user", user.to_string());
        inner.audit_action(tenant, "user.token.mint", ("admin", None), target, |e| e.with_detail(detail)).await;
        Ok(MintedToken { user: user.to_string(), token, expires: Timestamp(expires) })
    }

    /// Voids every token of the account and closes its sessions on every node (`DELETE …/users/{u}/tokens`).
    pub async fn revoke_backend_tokens(&self, tenant: TenantId, user: UserId) -> ServiceResult<TokensRevoked> {
        let ev = Eviction { device: None, revoke_tokens: true, reason: "tokens revoked".into() };
        self.evict(tenant, user, ev).await.map_err(|e| match e {
            ServiceError::NotFound => ServiceError::UserNotFound,
            e => e,
        })?;
        let account = self.inner.ports.users.get_user(tenant, user).await?.ok_or(ServiceError::UserNotFound)?;
        Ok(TokensRevoked { user: user.to_string(), auth_version: account.auth_version })
    }

    async fn user_info(&self, tenant: TenantId, user: User) -> ServiceResult<UserInfo> {
        let identity = self.inner.ports.users.identity_of(tenant, user.id).await?;
        let state = user.state.as_str();
        Ok(UserInfo {
            user: user.id.to_string(),
            state: state.to_owned(),
            created: Timestamp(user.created),
            updated: Timestamp(user.updated),
            login: identity.login,
            external_id: identity.external_id,
            public: user.public,
            tags: user.tags,
        })
    }
}
