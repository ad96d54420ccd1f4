//! An in-memory tenant registry, for tests and for tools that need a registry without a control database.

use palaver_core::ports::TenantStore;
use palaver_core::{StoreError, StoreResult, Tenant, TenantId, TenantState};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Tenants kept in a map keyed by id. Cloning is cheap and clones share the data.
#[derive(Clone, Default)]
pub struct MemoryTenants {
    inner: Arc<Mutex<Registry>>,
}

/// The registry's state, behind one lock so that a code or key check and the write that follows are atomic.
#[derive(Default)]
struct Registry {
    /// Keyed by id, so listing in id order is a plain iteration.
    tenants: BTreeMap<TenantId, Tenant>,
    /// The last id handed out; the first tenant gets 1.
    last_id: u64,
}

impl MemoryTenants {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for MemoryTenants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTenants").finish_non_exhaustive()
    }
}

/// True for 1 to 32 characters of `[a-z0-9_-]`. The code becomes part of a database name, so nothing else is let
/// through.
fn valid_code(code: &str) -> bool {
    (1..=32).contains(&code.len()) && code.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

use palaver_core::now_millis as now;

#[async_trait::async_trait]
impl TenantStore for MemoryTenants {
    async fn create_tenant(&self, code: &str, name: &str) -> StoreResult<Tenant> {
        // The port has no error kind for bad input, and `Conflict` would tell the caller to pick another code
        // when the problem is the code's shape. An invalid code is a caller bug (codes come from operators and
        // are validated before they reach the registry), so it is reported as `Internal`.
        if !valid_code(code) {
            return Err(StoreError::Internal(format!("invalid tenant code {code:?}")));
        }
        let mut registry = self.inner.lock();
        if registry.tenants.values().any(|t| t.code == code) {
            return Err(StoreError::Conflict(format!("tenant code {code} is taken")));
        }
        registry.last_id += 1;
        let id = TenantId(registry.last_id);
        let when = now();
        let tenant = Tenant {
            id,
            code: code.to_owned(),
            name: name.to_owned(),
            state: TenantState::Active,
            database: format!("palaver_t_{code}"),
            api_keys: Vec::new(),
            config: serde_json::json!({}),
            created: when,
            updated: when,
        };
        registry.tenants.insert(id, tenant.clone());
        Ok(tenant)
    }

    async fn get_tenant(&self, id: TenantId) -> StoreResult<Option<Tenant>> {
        Ok(self.inner.lock().tenants.get(&id).cloned())
    }

    async fn find_tenant_by_code(&self, code: &str) -> StoreResult<Option<Tenant>> {
        Ok(self.inner.lock().tenants.values().find(|t| t.code == code).cloned())
    }

    async fn find_tenant_by_api_key(&self, api_key: &str) -> StoreResult<Option<Tenant>> {
        Ok(self.inner.lock().tenants.values().find(|t| t.api_keys.iter().any(|k| k == api_key)).cloned())
    }

    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>> {
        Ok(self.inner.lock().tenants.values().cloned().collect())
    }

    async fn set_tenant_state(&self, id: TenantId, state: TenantState) -> StoreResult<()> {
        let mut registry = self.inner.lock();
        let tenant = registry.tenants.get_mut(&id).ok_or(StoreError::NotFound)?;
        tenant.state = state;
        tenant.updated = now();
        Ok(())
    }

    async fn remove_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()> {
        let mut registry = self.inner.lock();
        let tenant = registry.tenants.get_mut(&id).ok_or(StoreError::NotFound)?;
        let before = tenant.api_keys.len();
        tenant.api_keys.retain(|k| k != api_key);
        if tenant.api_keys.len() == before {
            return Err(StoreError::NotFound);
        }
        tenant.updated = now();
        Ok(())
    }

    async fn add_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()> {
        let mut registry = self.inner.lock();
        if !registry.tenants.contains_key(&id) {
            return Err(StoreError::NotFound);
        }
        // A key must resolve to exactly one tenant; adding it again to its own tenant is a harmless repeat.
        if registry.tenants.values().any(|t| t.id != id && t.api_keys.iter().any(|k| k == api_key)) {
            return Err(StoreError::Conflict("api key belongs to another tenant".to_owned()));
        }
        let tenant = registry.tenants.get_mut(&id).ok_or(StoreError::NotFound)?;
        if !tenant.api_keys.iter().any(|k| k == api_key) {
            tenant.api_keys.push(api_key.to_owned());
            tenant.updated = now();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ids_start_at_one_and_databases_follow_the_code() {
        let r = MemoryTenants::new();
        let first = r.create_tenant("default", "Default").await.unwrap();
        let second = r.create_tenant("acme_2", "Acme").await.unwrap();
        assert_eq!((first.id, second.id), (TenantId(1), TenantId(2)));
        assert_eq!(first.database, "palaver_t_default");
        assert_eq!(second.database, "palaver_t_acme_2");
        assert_eq!(first.config, serde_json::json!({}));
    }

    #[tokio::test]
    async fn invalid_codes_are_refused() {
        let r = MemoryTenants::new();
        for code in ["", "Acme", "a b", "a.b", "ü", &"x".repeat(33)] {
            let result = r.create_tenant(code, "Bad").await;
            assert!(matches!(result, Err(StoreError::Internal(_))), "{code:?}: {result:?}");
        }
        assert!(r.create_tenant(&"x".repeat(32), "Longest").await.is_ok());
        assert_eq!(r.list_tenants().await.unwrap().len(), 1, "refused codes took no id");
    }
}
