//! The user port of the in-memory store: accounts, basic credentials and tag search.

use super::MemoryStore;
use super::TenantData;
use palaver_core::ports::{Identity, QueueRecord, UserStore};
use palaver_core::{AuthRecord, RecordState, StoreError, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate};

#[async_trait::async_trait]
impl UserStore for MemoryStore {
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        self.with_tenant(tenant, |t| insert_user(t, user, auth, None))
    }

    async fn create_external_user(
        &self,
        tenant: TenantId,
        user: &User,
        auth: Option<&AuthRecord>,
        external_id: &str,
    ) -> StoreResult<()> {
        self.with_tenant(tenant, |t| insert_user(t, user, auth, Some(external_id)))
    }

    async fn find_external(&self, tenant: TenantId, external_id: &str) -> StoreResult<Option<UserId>> {
        Ok(self.with_tenant(tenant, |t| t.external.get(external_id).copied()))
    }

    async fn forget_identities(&self, tenant: TenantId, id: UserId) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            if let Some(login) = t.login_of.remove(&id) {
                t.auth.remove(&login);
            }
            if let Some(external) = t.external_of.remove(&id) {
                t.external.remove(&external);
            }
        });
        Ok(())
    }

    async fn identity_of(&self, tenant: TenantId, id: UserId) -> StoreResult<Identity> {
        Ok(self.with_tenant(tenant, |t| Identity {
            login: t.login_of.get(&id).cloned(),
            external_id: t.external_of.get(&id).cloned(),
        }))
    }

    async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<User>> {
        Ok(self.with_tenant(tenant, |t| t.users.get(&id).cloned()))
    }

    async fn update_user(&self, tenant: TenantId, id: UserId, update: &UserUpdate) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let user = t.users.get_mut(&id).ok_or(StoreError::NotFound)?;
            user.updated = update.updated;
            if let Some(public) = &update.public {
                user.public = (!public.is_null()).then(|| public.clone());
            }
            if let Some(trusted) = &update.trusted {
                user.trusted = (!trusted.is_null()).then(|| trusted.clone());
            }
            if let Some(tags) = &update.tags {
                user.tags = tags.clone();
            }
            if let Some(defacs) = update.defacs {
                user.defacs = defacs;
            }
            Ok(())
        })
    }

    async fn touch_user(&self, tenant: TenantId, id: UserId, when: UnixMillis, ua: Option<&str>) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let user = t.users.get_mut(&id).ok_or(StoreError::NotFound)?;
            user.last_seen = Some(when);
            if let Some(ua) = ua {
                user.user_agent = Some(ua.to_owned());
            }
            Ok(())
        })
    }

    async fn find_auth(&self, tenant: TenantId, login: &str) -> StoreResult<Option<AuthRecord>> {
        Ok(self.with_tenant(tenant, |t| t.auth.get(&palaver_core::normalize_login(login)).cloned()))
    }

    async fn set_secret(
        &self,
        tenant: TenantId,
        id: UserId,
        secret_hash: &str,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let version = self.with_tenant(tenant, |t| {
            let login = t.login_of.get(&id).ok_or(StoreError::NotFound)?;
            let record = t.auth.get_mut(login).ok_or(StoreError::NotFound)?;
            let user = t.users.get_mut(&id).ok_or(StoreError::NotFound)?;
            record.secret_hash = secret_hash.to_owned();
            user.auth_version += 1;
            Ok(user.auth_version)
        })?;
        // In process there is no crash to survive between the two writes; the order matches the SQL adapters'.
        self.owe(tenant, owed).await?;
        Ok(version)
    }

    async fn revoke_tokens(
        &self,
        tenant: TenantId,
        id: UserId,
        state: Option<RecordState>,
        owed: &[QueueRecord],
    ) -> StoreResult<i64> {
        let version = self.with_tenant(tenant, |t| {
            let user = t.users.get_mut(&id).ok_or(StoreError::NotFound)?;
            if user.state == RecordState::Deleted && state.is_some_and(|s| s != RecordState::Deleted) {
                return Err(StoreError::NotFound);
            }
            if let Some(state) = state {
                user.state = state;
            }
            user.auth_version += 1;
            Ok(user.auth_version)
        })?;
        self.owe(tenant, owed).await?;
        Ok(version)
    }

    async fn find_users_by_tags(&self, tenant: TenantId, tags: &[String], limit: usize) -> StoreResult<Vec<User>> {
        Ok(self.with_tenant(tenant, |t| {
            t.users
                .values()
                .filter(|u| u.state == RecordState::Active && u.tags.iter().any(|tag| tags.contains(tag)))
                .take(limit)
                .cloned()
                .collect()
        }))
    }
}

/// Stores a user, its credential and its external id, all or nothing: every check runs before the first write.
fn insert_user(t: &mut TenantData, user: &User, auth: Option<&AuthRecord>, external: Option<&str>) -> StoreResult<()> {
    if t.users.contains_key(&user.id) {
        return Err(StoreError::Conflict(format!("user {} exists", user.id)));
    }
    let login = auth.map(|a| palaver_core::normalize_login(&a.login));
    if let Some(login) = login.as_ref().filter(|l| t.auth.contains_key(*l)) {
        return Err(StoreError::Conflict(format!("login {login:?} is taken")));
    }
    if let Some(external) = external.filter(|e| t.external.contains_key(*e)) {
        return Err(StoreError::Conflict(format!("external id {external:?} is taken")));
    }
    if let (Some(a), Some(login)) = (auth, login) {
        // The record is stored under the new user's id whatever it says, so a credential can never be attached
        // to someone else's account.
        let record = AuthRecord { user: user.id, login, secret_hash: a.secret_hash.clone() };
        t.login_of.insert(user.id, record.login.clone());
        t.auth.insert(record.login.clone(), record);
    }
    if let Some(external) = external {
        t.external.insert(external.to_owned(), user.id);
        t.external_of.insert(user.id, external.to_owned());
    }
    t.users.insert(user.id, user.clone());
    Ok(())
}
