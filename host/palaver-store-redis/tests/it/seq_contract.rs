//! The seq allocator's contract suite against a real Redis, each case under a key prefix of its own.

use palaver_core::ports::SeqAllocator;
use palaver_store_redis::RedisSeq;
use std::sync::Arc;

async fn allocator(test: &str) -> Arc<dyn SeqAllocator> {
    match crate::live(crate::config(test)).await {
        Some(client) => Arc::new(RedisSeq::new(client)),
        // Skipping (PALAVER_SKIP_REDIS=1): the in-process allocator keeps the cases meaningful without a server.
        None => Arc::new(palaver_store_memory::MemorySeq::new()),
    }
}

palaver_contract::seq_contract_tests!(allocator("seq-contract"));
