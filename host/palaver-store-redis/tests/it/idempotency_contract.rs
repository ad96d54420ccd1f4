//! The idempotency keys' contract suite against a real Redis, each case under a key prefix of its own.

use palaver_core::ports::IdempotencyStore;
use palaver_store_redis::RedisIdempotency;
use std::sync::Arc;
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

async fn store(test: &str) -> Arc<dyn IdempotencyStore> {
    match crate::live(crate::config(test)).await {
        Some(client) => Arc::new(RedisIdempotency::new(client)),
        // Skipping (PALAVER_SKIP_REDIS=1): the in-process store keeps the cases meaningful without a server.
        None => Arc::new(palaver_store_memory::MemoryIdempotency::new(MINUTE, MINUTE, MINUTE)),
    }
}

palaver_contract::idempotency_contract_tests!(store("idempotency-contract"));
