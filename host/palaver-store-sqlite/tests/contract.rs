//! Runs the shared storage, relation, group, notification, outbox, audit, queue, plugin key-value, plugin choice and
//! plugin release contract suites (among others) against SQLite, each case on a fresh database file.

use palaver_contract::Fixture;
use palaver_store_sqlite::SqliteStore;

/// A store on a new file in a temporary directory that lives as long as the case.
async fn fresh() -> Fixture<SqliteStore> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(&dir.path().join("palaver.db")).await.expect("open sqlite store");
    Fixture::with_guard(store, dir)
}

palaver_contract::storage_contract_tests!(fixture = fresh());

palaver_contract::relation_contract_tests!(fixture = fresh());

palaver_contract::group_contract_tests!(fixture = fresh());

palaver_contract::notification_contract_tests!(fixture = fresh());

palaver_contract::command_contract_tests!(fixture = fresh());

palaver_contract::outbox_contract_tests!(fixture = fresh());

palaver_contract::owed_contract_tests!(fixture = fresh());

palaver_contract::audit_contract_tests!(fixture = fresh());

palaver_contract::device_contract_tests!(fixture = fresh());

palaver_contract::call_contract_tests!(fixture = fresh());

palaver_contract::settings_contract_tests!(fixture = fresh());

mod queue {
    use palaver_store_sqlite::{SqliteQueue, SqliteStore};

    /// The embedded queue on a new file; the directory lives as long as the test process (a case's queue owns no
    /// guard).
    async fn fresh_queue() -> SqliteQueue {
        let dir = tempfile::tempdir().expect("temporary directory").keep();
        SqliteQueue::new(SqliteStore::open(&dir.join("queue.db")).await.expect("open sqlite store"))
    }

    palaver_contract::queue_contract_tests!(fresh_queue());
}
palaver_contract::file_contract_tests!(fixture = fresh());

palaver_contract::credential_contract_tests!(fixture = fresh());

palaver_contract::plugin_kv_contract_tests!(fixture = fresh());

palaver_contract::plugin_choice_contract_tests!(fixture = fresh());

palaver_contract::plugin_release_contract_tests!(fixture = fresh());
