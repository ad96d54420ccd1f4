//! The audit log in process: per tenant, rows in insertion order, at most one per event id.

use async_trait::async_trait;
use palaver_core::ports::{AuditEvent, AuditStore};
use palaver_core::{StoreResult, TenantId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The audit log in process. Clones share the rows.
#[derive(Clone, Default)]
pub struct MemoryAudit {
    rows: Arc<Mutex<HashMap<TenantId, Vec<AuditEvent>>>>,
}

impl MemoryAudit {
    pub fn new() -> MemoryAudit {
        MemoryAudit::default()
    }
}

#[async_trait]
impl AuditStore for MemoryAudit {
    async fn record_audit(&self, tenant: TenantId, event: &AuditEvent) -> StoreResult<bool> {
        let mut rows = self.rows.lock();
        let rows = rows.entry(tenant).or_default();
        // The lock makes the look-up and the insert one step, so an event id is stored at most once.
        if rows.iter().any(|r| r.event_id == event.event_id) {
            return Ok(false);
        }
        rows.push(event.clone());
        Ok(true)
    }

    async fn list_audit(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<AuditEvent>> {
        let rows = self.rows.lock();
        Ok(rows.get(&tenant).map(|r| r.iter().rev().take(limit).cloned().collect()).unwrap_or_default())
    }
}
