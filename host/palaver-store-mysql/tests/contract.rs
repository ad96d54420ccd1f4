//! Runs the shared storage, relation, group, notification, outbox, audit, tenant registry, plugin choice and plugin
//! release contracts (among others) against a real MariaDB: every storage, relation, group, notification, outbox and
//! audit case on two fresh tenant databases, every registry, plugin choice and plugin release case on a fresh
//! control database.

mod common;

use palaver_core::ports::TenantStore;
use palaver_core::{StoreResult, Tenant, TenantId, TenantState};
use palaver_store_mysql::MysqlStore;

palaver_contract::storage_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::relation_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::group_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::notification_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::command_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

mod registry {
    use super::{common, registry};

    palaver_contract::tenant_contract_tests!({
        if common::skip() {
            return;
        }
        registry()
    });
}

/// A registry over a fresh control database, for the tenant contract; its databases go when it is dropped.
struct Registry {
    store: MysqlStore,
    _scratch: common::Scratch,
}

async fn registry() -> Registry {
    let scratch = common::Scratch::new();
    Registry { store: scratch.store().await, _scratch: scratch }
}

#[async_trait::async_trait]
impl TenantStore for Registry {
    async fn create_tenant(&self, code: &str, name: &str) -> StoreResult<Tenant> {
        self.store.create_tenant(code, name).await
    }
    async fn get_tenant(&self, id: TenantId) -> StoreResult<Option<Tenant>> {
        self.store.get_tenant(id).await
    }
    async fn find_tenant_by_code(&self, code: &str) -> StoreResult<Option<Tenant>> {
        self.store.find_tenant_by_code(code).await
    }
    async fn find_tenant_by_api_key(&self, key: &str) -> StoreResult<Option<Tenant>> {
        self.store.find_tenant_by_api_key(key).await
    }
    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>> {
        self.store.list_tenants().await
    }
    async fn set_tenant_state(&self, id: TenantId, state: TenantState) -> StoreResult<()> {
        self.store.set_tenant_state(id, state).await
    }
    async fn add_api_key(&self, id: TenantId, key: &str) -> StoreResult<()> {
        self.store.add_api_key(id, key).await
    }
    async fn remove_api_key(&self, id: TenantId, key: &str) -> StoreResult<()> {
        self.store.remove_api_key(id, key).await
    }
}

palaver_contract::outbox_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::owed_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::audit_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::device_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::call_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::settings_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::file_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::credential_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::plugin_kv_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

palaver_contract::plugin_choice_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::control_fixture()
    }
);

palaver_contract::plugin_release_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::control_fixture()
    }
);
