//! The storage contract suite run through the Redis decorators stacked on the in-memory store, twice: with a
//! live Redis (every copy in play, hot copies for every topic) and with Redis unreachable (every call degraded
//! to the inner store). Both must keep the ports' semantics exactly.

use crate::common;
use palaver_contract::Fixture;
use palaver_store_memory::MemoryStore;
use palaver_store_redis::{CachedStorage, HotPolicy, RedisClient, RedisConfig};
use std::sync::Arc;

fn stack(client: RedisClient) -> Fixture<CachedStorage> {
    Fixture::new(CachedStorage::over(client, Arc::new(MemoryStore::new()), HotPolicy::Always))
}

/// A stack on the test Redis under a fresh prefix. Without Redis (and with `PALAVER_SKIP_REDIS=1`, otherwise
/// `live` fails the test) the case still runs, degraded, which is the other suite's setting.
async fn live_stack() -> Fixture<CachedStorage> {
    // A 1 ms invalidation grace lets the cases' reads right after their writes fill and hit the copies, so
    // the cached paths are exercised too, not only the hot ones.
    let config = RedisConfig { cache_invalidation_grace_ms: 1, ..common::config("contract") };
    match common::live(config).await {
        Some(client) => stack(client),
        None => stack(common::dead_client("contract")),
    }
}

async fn degraded_stack() -> Fixture<CachedStorage> {
    stack(common::dead_client("contract-degraded"))
}

mod live {
    palaver_contract::storage_contract_tests!(fixture = super::live_stack());
}

mod degraded {
    palaver_contract::storage_contract_tests!(fixture = super::degraded_stack());
}
