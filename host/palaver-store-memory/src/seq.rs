//! The embedded seq allocator: one counter per (tenant, topic), kept in process.

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const T: TenantId = TenantId(1);

    #[tokio::test]
    async fn respects_floor_and_rebaseline() {
        let seq = MemorySeq::new();
        assert_eq!(seq.next_seq(T, "grpA", 0).await.unwrap(), 1);
        assert_eq!(seq.next_seq(T, "grpA", 0).await.unwrap(), 2);
        assert_eq!(seq.next_seq(T, "grpA", 10).await.unwrap(), 11);
        seq.rebaseline(T, "grpA", 5).await.unwrap();
        assert_eq!(seq.next_seq(T, "grpA", 0).await.unwrap(), 12, "rebaseline never lowers");
        seq.rebaseline(T, "grpA", 20).await.unwrap();
        assert_eq!(seq.next_seq(T, "grpA", 0).await.unwrap(), 21);
        assert_eq!(seq.next_seq(TenantId(2), "grpA", 0).await.unwrap(), 1, "tenants count apart");
        seq.forget(T, "grpA").await.unwrap();
        assert_eq!(seq.next_seq(T, "grpA", 3).await.unwrap(), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_tasks_never_get_the_same_seq() {
        let seq = MemorySeq::new();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let seq = seq.clone();
            tasks.push(tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..500 {
                    got.push(seq.next_seq(T, "grpA", 0).await.unwrap());
                }
                got
            }));
        }
        let mut all = HashSet::new();
        for task in tasks {
            let got = task.await.unwrap();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "each task sees increasing seqs");
            for s in got {
                assert!(all.insert(s), "seq {s} handed out twice");
            }
        }
        assert_eq!(all.len(), 4000);
        assert_eq!(all.iter().max(), Some(&4000));
    }
}
