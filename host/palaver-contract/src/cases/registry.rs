//! Contract cases for the tenant registry: codes, API keys, state and listing. [`crate::tenant_contract_tests!`]
//! runs them against any `TenantStore`.

use super::{assert_conflict, assert_not_found};
use palaver_core::ports::TenantStore;
use palaver_core::{TenantId, TenantState};

/// A created tenant is active, keyless, and found again by id and by code.
pub async fn registry_create_get_find_by_code<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    assert_eq!((acme.code.as_str(), acme.name.as_str()), ("acme", "Acme Corp"));
    assert_eq!(acme.state, TenantState::Active);
    assert!(acme.api_keys.is_empty(), "a new tenant has no keys");
    assert!(!acme.database.is_empty(), "every tenant names its database");
    let other = r.create_tenant("other-1", "Other").await.unwrap();
    assert_ne!(acme.id, other.id, "ids are unique");
    assert_ne!(acme.database, other.database, "databases are per tenant");
    assert_eq!(r.get_tenant(acme.id).await.unwrap(), Some(acme.clone()));
    assert_eq!(r.find_tenant_by_code("acme").await.unwrap(), Some(acme));
    assert_eq!(r.find_tenant_by_code("other-1").await.unwrap(), Some(other));
    assert_eq!(r.find_tenant_by_code("nobody").await.unwrap(), None);
}

/// A code names one tenant: registering it again is a conflict and leaves the first tenant alone.
pub async fn registry_taken_code_conflicts<R: TenantStore>(r: R) {
    let first = r.create_tenant("acme", "Acme Corp").await.unwrap();
    assert_conflict(r.create_tenant("acme", "Impostor").await, "taken code");
    assert_eq!(r.find_tenant_by_code("acme").await.unwrap(), Some(first));
    assert_eq!(r.list_tenants().await.unwrap().len(), 1, "the refused tenant was not stored");
}

/// API keys added to a tenant resolve to it; unknown keys resolve to nothing.
pub async fn registry_api_key_finds_tenant<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    let other = r.create_tenant("other", "Other").await.unwrap();
    r.add_api_key(acme.id, "key-a1").await.unwrap();
    r.add_api_key(acme.id, "key-a2").await.unwrap();
    r.add_api_key(other.id, "key-o1").await.unwrap();
    for key in ["key-a1", "key-a2"] {
        assert_eq!(r.find_tenant_by_api_key(key).await.unwrap().map(|t| t.id), Some(acme.id), "{key}");
    }
    assert_eq!(r.find_tenant_by_api_key("key-o1").await.unwrap().map(|t| t.id), Some(other.id));
    assert_eq!(r.find_tenant_by_api_key("key-none").await.unwrap(), None);
    let mut keys = r.get_tenant(acme.id).await.unwrap().unwrap().api_keys;
    keys.sort();
    assert_eq!(keys, vec!["key-a1".to_owned(), "key-a2".to_owned()], "the tenant lists its keys");
}

/// A key resolves to exactly one tenant, so giving it to a second one is a conflict.
pub async fn registry_api_key_on_two_tenants_conflicts<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    let other = r.create_tenant("other", "Other").await.unwrap();
    r.add_api_key(acme.id, "shared").await.unwrap();
    assert_conflict(r.add_api_key(other.id, "shared").await, "key of another tenant");
    assert_eq!(r.find_tenant_by_api_key("shared").await.unwrap().map(|t| t.id), Some(acme.id));
    assert!(r.get_tenant(other.id).await.unwrap().unwrap().api_keys.is_empty(), "the refused key was not stored");
}

/// Disabling and re-enabling a tenant is seen by every lookup.
pub async fn registry_tenant_state_round_trips<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    r.add_api_key(acme.id, "key-a").await.unwrap();
    r.set_tenant_state(acme.id, TenantState::Disabled).await.unwrap();
    assert_eq!(r.get_tenant(acme.id).await.unwrap().unwrap().state, TenantState::Disabled);
    assert_eq!(r.find_tenant_by_code("acme").await.unwrap().unwrap().state, TenantState::Disabled);
    let by_key = r.find_tenant_by_api_key("key-a").await.unwrap().unwrap();
    assert_eq!(by_key.state, TenantState::Disabled, "a disabled tenant's keys still resolve, so callers can refuse");
    r.set_tenant_state(acme.id, TenantState::Active).await.unwrap();
    assert_eq!(r.get_tenant(acme.id).await.unwrap().unwrap().state, TenantState::Active);
}

/// `list_tenants` returns every tenant in id order, and ids grow in creation order.
pub async fn registry_list_tenants_by_id<R: TenantStore>(r: R) {
    assert!(r.list_tenants().await.unwrap().is_empty(), "a fresh registry is empty");
    let mut created = Vec::new();
    for code in ["zeta", "alpha", "mid"] {
        created.push(r.create_tenant(code, &code.to_uppercase()).await.unwrap());
    }
    assert!(created.windows(2).all(|w| w[0].id < w[1].id), "ids grow: {created:?}");
    assert_eq!(r.list_tenants().await.unwrap(), created, "by id, not by code");
}

/// An unknown id reads as `None` and cannot be changed.
pub async fn registry_missing_tenant<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    let missing = TenantId(acme.id.0 + 1000);
    assert_eq!(r.get_tenant(missing).await.unwrap(), None);
    assert_not_found(r.set_tenant_state(missing, TenantState::Disabled).await, "set_tenant_state on a missing id");
    assert_not_found(r.add_api_key(missing, "key-x").await, "add_api_key on a missing id");
    assert_eq!(r.find_tenant_by_api_key("key-x").await.unwrap(), None, "the refused key was not stored");
}

/// A removed key resolves to nothing, the tenant's other keys still resolve, and another tenant's key cannot be
/// removed through the wrong tenant.
pub async fn registry_api_key_removal<R: TenantStore>(r: R) {
    let acme = r.create_tenant("acme", "Acme Corp").await.unwrap();
    let other = r.create_tenant("other", "Other").await.unwrap();
    r.add_api_key(acme.id, "key-old").await.unwrap();
    r.add_api_key(acme.id, "key-new").await.unwrap();
    r.add_api_key(other.id, "key-o").await.unwrap();
    r.remove_api_key(acme.id, "key-old").await.unwrap();
    assert_eq!(r.find_tenant_by_api_key("key-old").await.unwrap(), None, "a removed key resolves to nothing");
    assert_eq!(r.find_tenant_by_api_key("key-new").await.unwrap().map(|t| t.id), Some(acme.id));
    assert_eq!(r.get_tenant(acme.id).await.unwrap().unwrap().api_keys, vec!["key-new".to_owned()]);
    assert_not_found(r.remove_api_key(acme.id, "key-old").await, "removing a key twice");
    assert_not_found(r.remove_api_key(acme.id, "key-o").await, "another tenant's key");
    assert_eq!(r.find_tenant_by_api_key("key-o").await.unwrap().map(|t| t.id), Some(other.id), "it stays");
    assert_not_found(r.remove_api_key(TenantId(other.id.0 + 1000), "key-o").await, "a missing tenant");
}
