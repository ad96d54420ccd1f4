//! Runs the shared storage, relation, group, notification and tenant registry contract suites against the
//! in-memory adapters.

use palaver_store_memory::{MemoryStore, MemoryTenants};

palaver_contract::storage_contract_tests!(async { MemoryStore::new() });

palaver_contract::tenant_contract_tests!(async { MemoryTenants::new() });

palaver_contract::relation_contract_tests!(async { MemoryStore::new() });

palaver_contract::group_contract_tests!(async { MemoryStore::new() });

palaver_contract::notification_contract_tests!(async { MemoryStore::new() });
