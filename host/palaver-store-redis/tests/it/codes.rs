//! The one-time code store's contract suite against a real Redis, each case under a key prefix of its own.

use palaver_core::ports::CodeStore;
use palaver_store_redis::RedisCodes;
use std::sync::Arc;

async fn store(test: &str) -> Arc<dyn CodeStore> {
    match crate::live(crate::config(test)).await {
        Some(client) => Arc::new(RedisCodes::new(client)),
        // Skipping (PALAVER_SKIP_REDIS=1): the in-process store keeps the cases meaningful without a server.
        None => Arc::new(palaver_store_memory::MemoryCodes::new(10_000)),
    }
}

palaver_contract::code_contract_tests!(store("codes"));
