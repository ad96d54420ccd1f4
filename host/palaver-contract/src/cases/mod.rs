//! The contract cases, one public async function each. [`crate::storage_contract_tests!`] lists the storage
//! cases, [`crate::relation_contract_tests!`] the relation store's, [`crate::notification_contract_tests!`] the
//! notification store's, [`crate::group_contract_tests!`] the group store's and
//! [`crate::tenant_contract_tests!`] the tenant registry's, [`crate::queue_contract_tests!`] the task queue's,
//! [`crate::outbox_contract_tests!`] the outbox's, [`crate::owed_contract_tests!`] the records a user change
//! owes, [`crate::audit_contract_tests!`] the audit log's,
//! [`crate::device_contract_tests!`] the device store's, [`crate::call_contract_tests!`] the call store's,
//! [`crate::settings_contract_tests!`] the tenant settings store's, [`crate::file_contract_tests!`] the file
//! record store's, [`crate::credential_contract_tests!`] the credential store's,
//! [`crate::code_contract_tests!`] the one-time code store's,
//! [`crate::plugin_kv_contract_tests!`] the plugin key-value store's,
//! [`crate::plugin_choice_contract_tests!`] the plugin choice store's,
//! [`crate::plugin_release_contract_tests!`] the plugin release store's, [`crate::seq_contract_tests!`] the seq
//! allocator's, [`crate::idempotency_contract_tests!`] the idempotency keys' and
//! [`crate::blob_contract_tests!`] the blob store's; an adapter
//! may also call single cases from its own tests.

/// A group topic name no other case, nor another run on the same server, uses: for suites over a server that
/// outlives one case (Redis).
pub(crate) fn fresh_topic() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("grp{}x{nanos}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

mod audit;
mod calls;
mod codes;
mod commands;
mod credentials;
mod deletions;
mod devices;
mod files;
mod group_announcements;
mod group_requests;
mod group_state;
mod groups;
mod idempotency;
mod messages;
mod notifications;
mod outbox;
mod owed;
mod plugin_choices;
mod plugin_kv;
mod plugin_releases;
mod queue;
mod registry;
mod relations;
mod requests;
mod seqs;
mod settings;
mod subs;
mod tenancy;
mod topics;
mod users;

pub use audit::*;
pub use calls::*;
pub use codes::*;
pub use commands::*;
pub use credentials::*;
pub use deletions::*;
pub use devices::*;
pub use files::*;
pub use group_announcements::*;
pub use group_requests::*;
pub use group_state::*;
pub use groups::*;
pub use idempotency::*;
pub use messages::*;
pub use notifications::*;
pub use outbox::*;
pub use owed::*;
pub use plugin_choices::*;
pub use plugin_kv::*;
pub use plugin_releases::*;
pub use queue::*;
pub use registry::*;
pub use relations::*;
pub use requests::*;
pub use seqs::*;
pub use settings::*;
pub use subs::*;
pub use tenancy::*;
pub use topics::*;
pub use users::*;

use palaver_core::StoreError;

/// Panics unless `result` is a `Conflict`, naming what was expected.
#[track_caller]
fn assert_conflict<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(matches!(result, Err(StoreError::Conflict(_))), "{what}: expected Conflict, got {result:?}");
}

/// Panics unless `result` is `NotFound`, naming what was expected.
#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(matches!(result, Err(StoreError::NotFound)), "{what}: expected NotFound, got {result:?}");
}
