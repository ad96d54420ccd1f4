//! Runs the shared storage, relation, group, notification, tenant registry, queue, outbox, audit, plugin choice and
//! plugin release contract suites (among others) against the in-memory adapters.

use palaver_store_memory::{MemoryStore, MemoryTenants};

palaver_contract::storage_contract_tests!(async { MemoryStore::new() });

palaver_contract::owed_contract_tests!(async { MemoryStore::new() });

palaver_contract::tenant_contract_tests!(async { MemoryTenants::new() });

palaver_contract::relation_contract_tests!(async { MemoryStore::new() });

palaver_contract::group_contract_tests!(async { MemoryStore::new() });

palaver_contract::notification_contract_tests!(async { MemoryStore::new() });

palaver_contract::command_contract_tests!(async { MemoryStore::new() });

palaver_contract::device_contract_tests!(async { palaver_store_memory::MemoryDevices::new() });

palaver_contract::call_contract_tests!(async { palaver_store_memory::MemoryCalls::new() });

palaver_contract::settings_contract_tests!(async { palaver_store_memory::MemorySettings::new() });

mod queue {
    use palaver_store_memory::{MemoryAudit, MemoryOutbox, MemoryQueue};

    palaver_contract::queue_contract_tests!(async { MemoryQueue::new() });

    palaver_contract::outbox_contract_tests!(async { MemoryOutbox::new() });

    palaver_contract::audit_contract_tests!(async { MemoryAudit::new() });
}
palaver_contract::file_contract_tests!(async { palaver_store_memory::MemoryFiles::new() });

palaver_contract::credential_contract_tests!(async { MemoryStore::new() });

palaver_contract::code_contract_tests!(async {
    std::sync::Arc::new(palaver_store_memory::MemoryCodes::new(10_000))
        as std::sync::Arc<dyn palaver_core::ports::CodeStore>
});

palaver_contract::seq_contract_tests!(async {
    std::sync::Arc::new(palaver_store_memory::MemorySeq::new()) as std::sync::Arc<dyn palaver_core::ports::SeqAllocator>
});

/// The idempotency keys' TTLs in the contract cases: longer than any case runs.
const MINUTE: std::time::Duration = std::time::Duration::from_secs(60);

palaver_contract::idempotency_contract_tests!(async {
    std::sync::Arc::new(palaver_store_memory::MemoryIdempotency::new(MINUTE, MINUTE, MINUTE))
        as std::sync::Arc<dyn palaver_core::ports::IdempotencyStore>
});

palaver_contract::plugin_choice_contract_tests!(async { palaver_store_memory::MemoryPluginChoices::new() });

palaver_contract::plugin_release_contract_tests!(async { palaver_store_memory::MemoryPluginReleases::new() });
