//! Tenant settings in process: one map per tenant from a document's name to its JSON, for tests and the service
//! harness (the embedded mode keeps its settings in SQLite).

use async_trait::async_trait;
use palaver_core::ports::SettingsStore;
use palaver_core::{StoreResult, TenantId};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Settings documents by tenant and name. Clones share them.
#[derive(Clone, Default)]
pub struct MemorySettings {
    rows: Arc<Mutex<HashMap<(TenantId, String), Value>>>,
}

impl MemorySettings {
    pub fn new() -> MemorySettings {
        MemorySettings::default()
    }
}

#[async_trait]
impl SettingsStore for MemorySettings {
    async fn get_setting(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Value>> {
        Ok(self.rows.lock().get(&(tenant, name.to_owned())).cloned())
    }

    async fn put_setting(&self, tenant: TenantId, name: &str, value: Option<&Value>) -> StoreResult<()> {
        let mut rows = self.rows.lock();
        match value {
            Some(v) => rows.insert((tenant, name.to_owned()), v.clone()),
            None => rows.remove(&(tenant, name.to_owned())),
        };
        Ok(())
    }
}
