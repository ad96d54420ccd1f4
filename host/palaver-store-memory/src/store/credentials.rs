//! The credential port of the in-memory store: each account's email addresses and phone numbers, and who
//! confirmed each one, decided under the store's one lock.

use super::MemoryStore;
use palaver_core::ports::{Added, Credential, CredentialStore};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use std::collections::{BTreeMap, HashMap};

/// One tenant's credentials.
#[derive(Default)]
pub(super) struct Credentials {
    /// Each account's credentials by `(method, value)`, so a list is in method, then value order.
    of: HashMap<UserId, BTreeMap<(String, String), Credential>>,
    /// The account that confirmed each `(method, value)`: at most one, as the SQL adapters' unique index.
    confirmed: HashMap<(String, String), UserId>,
}

fn key(method: &str, value: &str) -> (String, String) {
    (method.to_owned(), value.to_owned())
}

fn conflict(method: &str) -> StoreError {
    StoreError::Conflict(format!("{method} credential confirmed by another account"))
}

#[async_trait::async_trait]
impl CredentialStore for MemoryStore {
    async fn add_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        now: UnixMillis,
        max: usize,
    ) -> StoreResult<Added> {
        self.with_tenant(tenant, |t| {
            let c = &mut t.credentials;
            let k = key(method, value);
            if c.confirmed.get(&k).is_some_and(|owner| *owner != user) {
                return Err(conflict(method));
            }
            let mine = c.of.entry(user).or_default();
            if let Some(known) = mine.get(&k) {
                return Ok(Added::Known { done: known.done });
            }
            if mine.len() >= max {
                return Err(StoreError::Conflict(format!("the account has {max} credentials already")));
            }
            let credential = Credential { method: k.0.clone(), value: k.1.clone(), done: false, created: now };
            mine.insert(k, credential);
            Ok(Added::New)
        })
    }

    async fn confirm_credential(
        &self,
        tenant: TenantId,
        user: UserId,
        method: &str,
        value: &str,
        _now: UnixMillis,
    ) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let c = &mut t.credentials;
            let k = key(method, value);
            let credential = c.of.get_mut(&user).and_then(|m| m.get_mut(&k)).ok_or(StoreError::NotFound)?;
            match c.confirmed.get(&k) {
                Some(owner) if *owner == user => Ok(()),
                Some(_) => Err(conflict(method)),
                None => {
                    credential.done = true;
                    c.confirmed.insert(k, user);
                    Ok(())
                }
            }
        })
    }

    async fn credentials_of(&self, tenant: TenantId, user: UserId) -> StoreResult<Vec<Credential>> {
        Ok(self.with_tenant(tenant, |t| {
            t.credentials.of.get(&user).map(|m| m.values().cloned().collect()).unwrap_or_default()
        }))
    }

    async fn delete_credential(&self, tenant: TenantId, user: UserId, method: &str, value: &str) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            let c = &mut t.credentials;
            let k = key(method, value);
            let Some(removed) = c.of.get_mut(&user).and_then(|m| m.remove(&k)) else { return false };
            if removed.done {
                c.confirmed.remove(&k);
            }
            true
        }))
    }

    async fn find_by_credential(&self, tenant: TenantId, method: &str, value: &str) -> StoreResult<Option<UserId>> {
        Ok(self.with_tenant(tenant, |t| t.credentials.confirmed.get(&key(method, value)).copied()))
    }

    async fn forget_credentials(&self, tenant: TenantId, user: UserId) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let c = &mut t.credentials;
            for (k, removed) in c.of.remove(&user).unwrap_or_default() {
                if removed.done {
                    c.confirmed.remove(&k);
                }
            }
        });
        Ok(())
    }
}
