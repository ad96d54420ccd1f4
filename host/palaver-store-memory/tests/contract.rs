//! Runs the shared storage contract suite against the in-memory store.

use palaver_store_memory::MemoryStore;

palaver_contract::storage_contract_tests!(async { MemoryStore::new() });
