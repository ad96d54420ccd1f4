//! The user port of the in-memory store: accounts, basic credentials and tag search.

use super::MemoryStore;
use palaver_core::ports::{QueueRecord, UserStore};
use palaver_core::{AuthRecord, RecordState, StoreError, StoreResult, TenantId, UnixMillis, User, UserId, UserUpdate};

#[async_trait::async_trait]
impl UserStore for MemoryStore {
    async fn create_user(&self, tenant: TenantId, user: &User, auth: Option<&AuthRecord>) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            if t.users.contains_key(&user.id) {
                return Err(StoreError::Conflict(format!("user {} exists", user.id)));
            }
            let auth = auth.map(|a| AuthRecord { login: palaver_core::normalize_login(&a.login), ..a.clone() });
            if let Some(a) = &auth {
                if t.auth.contains_key(&a.login) {
                    return Err(StoreError::Conflict(format!("login {:?} is taken", a.login)));
                }
                // The record is stored under the new user's id whatever it says, so a credential can never be
                // attached to someone else's account.
                let record = AuthRecord { user: user.id, ..a.clone() };
                t.login_of.insert(user.id, record.login.clone());
                t.auth.insert(record.login.clone(), record);
            }
            t.users.insert(user.id, user.clone());
            Ok(())
        })
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
