//! Runs the shared storage, relation, group and notification contract suites against SQLite, each case on a fresh
//! database file.

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
