//! The embedded seq allocator: one counter per (tenant, topic), kept in process. Its tests are the seq contract
//! suite (`tests/contract.rs`).

use async_trait::async_trait;
use palaver_core::ports::SeqAllocator;
use palaver_core::{Seq, StoreResult, TenantId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Per-topic seq counters for a single node. Cloning is cheap and clones share the counters.
#[derive(Clone, Default, Debug)]
pub struct MemorySeq {
    counters: Arc<Mutex<HashMap<(TenantId, String), Seq>>>,
}

impl MemorySeq {
    /// An allocator with no counters; each topic's counter starts from the floor its first caller passes.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SeqAllocator for MemorySeq {
    async fn next_seqs(&self, tenant: TenantId, topic: &str, floor: Seq, count: u32) -> StoreResult<Seq> {
        let mut counters = self.counters.lock();
        let counter = counters.entry((tenant, topic.to_owned())).or_insert(0);
        let first = (*counter).max(floor) + 1;
        *counter = first + Seq::from(count.max(1)) - 1;
        Ok(first)
    }

    async fn rebaseline(&self, tenant: TenantId, topic: &str, floor: Seq) -> StoreResult<()> {
        let mut counters = self.counters.lock();
        let counter = counters.entry((tenant, topic.to_owned())).or_insert(0);
        *counter = (*counter).max(floor);
        Ok(())
    }

    async fn forget(&self, tenant: TenantId, topic: &str) -> StoreResult<()> {
        self.counters.lock().remove(&(tenant, topic.to_owned()));
        Ok(())
    }
}
