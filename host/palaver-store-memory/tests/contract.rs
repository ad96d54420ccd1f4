//! Runs the shared storage, relation and tenant registry contract suites against the in-memory adapters.

use palaver_store_memory::{MemoryStore, MemoryTenants};

palaver_contract::storage_contract_tests!(async { MemoryStore::new() });

palaver_contract::tenant_contract_tests!(async { MemoryTenants::new() });

palaver_contract::relation_contract_tests!(async { MemoryStore::new() });
