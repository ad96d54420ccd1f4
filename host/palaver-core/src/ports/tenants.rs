//! The tenant registry: which tenants exist, their state, database and API keys. Scale-out mode keeps it in the
//! control database; the embedded mode has one fixed tenant and needs no registry.

use crate::{StoreResult, Tenant, TenantId, TenantState};

/// The control registry of tenants.
#[async_trait::async_trait]
pub trait TenantStore: Send + Sync {
    /// Registers a tenant (and, for adapters with a database per tenant, creates and migrates it).
    /// `Conflict` if the code is taken.
    async fn create_tenant(&self, code: &str, name: &str) -> StoreResult<Tenant>;

    /// The tenant, or `None`.
    async fn get_tenant(&self, id: TenantId) -> StoreResult<Option<Tenant>>;

    /// The tenant with this code, or `None`.
    async fn find_tenant_by_code(&self, code: &str) -> StoreResult<Option<Tenant>>;

    /// The tenant an API key belongs to, or `None`.
    async fn find_tenant_by_api_key(&self, api_key: &str) -> StoreResult<Option<Tenant>>;

    /// Every tenant, by id.
    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>>;

    /// Enables or disables a tenant. `NotFound` if absent.
    async fn set_tenant_state(&self, id: TenantId, state: TenantState) -> StoreResult<()>;

    /// Adds an API key to a tenant. `Conflict` if another tenant has it; `NotFound` if the tenant is absent.
    async fn add_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()>;

    /// Removes an API key from a tenant, so that it resolves to nothing. `NotFound` if the tenant does not hold
    /// it (absent, or another tenant's key, which stays).
    async fn remove_api_key(&self, id: TenantId, api_key: &str) -> StoreResult<()>;
}
