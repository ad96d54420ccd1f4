//! Per-topic seq allocation. Embedded mode counts in process; scale-out mode uses Redis `INCRBY` in a script.

use crate::{Seq, StoreResult, TenantId};

/// Hands out message seqs for a topic.
#[async_trait::async_trait]
pub trait SeqAllocator: Send + Sync {
    /// The next seq of `topic`: greater than `floor` (the highest seq known stored) and than any seq handed out
    /// before. `floor` initialises the counter when it has none; it is not a query per message.
    async fn next_seq(&self, tenant: TenantId, topic: &str, floor: Seq) -> StoreResult<Seq> {
        self.next_seqs(tenant, topic, floor, 1).await
    }

    /// A run of `count` consecutive seqs of `topic` in one step, answered by its first: every one of them is
    /// greater than `floor` and than any seq handed out before, and none is handed out again. A `count` of 0
    /// is taken as 1. Publishing allocates the seqs of all the messages waiting on a topic this way, in one
    /// round trip.
    async fn next_seqs(&self, tenant: TenantId, topic: &str, floor: Seq, count: u32) -> StoreResult<Seq>;

    /// Raises the counter to at least `floor`, after a stored seq was found above it.
    async fn rebaseline(&self, tenant: TenantId, topic: &str, floor: Seq) -> StoreResult<()>;

    /// Forgets the counter of a deleted topic.
    async fn forget(&self, tenant: TenantId, topic: &str) -> StoreResult<()>;
}
