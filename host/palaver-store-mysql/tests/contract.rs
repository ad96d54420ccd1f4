//! Runs the shared storage contract and the tenant registry contract against a real MariaDB: every storage case
//! on two fresh tenant databases, every registry case on a fresh control database.

mod common;

palaver_contract::storage_contract_tests!(
    fixture = {
        if common::skip() {
            return;
        }
        common::storage_fixture()
    }
);

mod registry {
    use super::common;

    palaver_contract::tenant_contract_tests!({
        if common::skip() {
            return;
        }
        common::registry()
    });
}
