//! In-memory adapters for every port: the embedded default's seq, idempotency, presence and bus, and a reference store for tests.
//!
//! [`MemoryStore`] implements the four storage ports (and the credential port) over tenant-scoped maps; it is the
//! reference the contract suite is written against and the store tests reach for. [`MemorySeq`],
//! [`MemoryIdempotency`], [`MemoryPresence`] and [`MemoryBus`] are what the embedded single-node mode runs in production.
//! [`MemoryTenants`] is a tenant registry over a map, for tests of multi-tenant code. [`MemoryQueue`] and
//! [`MemoryOutbox`] are the task queue and outbox in process, and [`MemoryAudit`] the audit log, for tests of their
//! consumers. [`MemoryDevices`] is the device table for tests, [`MemoryCalls`] the call table, [`MemorySettings`] the tenant settings, [`MemoryFiles`] the file records; [`MemoryPushDedup`] the embedded mode's push dedup, [`MemoryCodes`] its one-time codes,
//! [`MemoryPluginChoices`] the tenants' plugin choices under one version counter, [`MemoryPluginReleases`] the plugin
//! releases and their rollouts under one revision counter, with the nodes' reports.
//!
//! Every adapter keeps its state behind a short `parking_lot` lock that is never held across an await, so the
//! async methods never suspend while holding it.

mod audit;
mod bus;
mod calls;
mod codes;
mod control;
mod files;
mod idempotency;
mod plugin_choices;
mod plugin_releases;
mod presence;
mod push;
mod queue;
mod seq;
mod settings;
mod store;
mod tenants;

pub use audit::MemoryAudit;
pub use bus::{MemoryBus, MemoryHub};
pub use calls::MemoryCalls;
pub use codes::MemoryCodes;
pub use control::{MemoryControl, MemoryNodes};
pub use files::MemoryFiles;
pub use idempotency::MemoryIdempotency;
pub use plugin_choices::MemoryPluginChoices;
pub use plugin_releases::MemoryPluginReleases;
pub use presence::MemoryPresence;
pub use push::{MemoryDevices, MemoryPushDedup};
pub use queue::{MemoryOutbox, MemoryQueue};
pub use seq::MemorySeq;
pub use settings::MemorySettings;
pub use store::MemoryStore;
pub use tenants::MemoryTenants;
