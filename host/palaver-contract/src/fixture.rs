//! What a contract case runs against: the store under test, the tenants it may use, and anything that must
//! outlive the store.

use palaver_core::TenantId;
use palaver_core::ports::{
    CommandStore, GroupStore, MessageStore, NotificationStore, RelationStore, ReportStore, SubscriptionStore,
    TopicStore, UserStore,
};
use std::any::Any;

/// Every storage port at once, as one adapter value that can be cloned into spawned tasks.
pub trait Storage: UserStore + TopicStore + SubscriptionStore + MessageStore + Clone + Send + Sync + 'static {}

impl<S> Storage for S where S: UserStore + TopicStore + SubscriptionStore + MessageStore + Clone + Send + Sync + 'static {}

/// The relation port, as one adapter value that can be cloned into spawned tasks.
pub trait RelationStorage: RelationStore + Clone + Send + Sync + 'static {}

impl<S> RelationStorage for S where S: RelationStore + Clone + Send + Sync + 'static {}

/// The notification port, as one adapter value that can be cloned into spawned tasks.
pub trait NotificationStorage: NotificationStore + Clone + Send + Sync + 'static {}

impl<S> NotificationStorage for S where S: NotificationStore + Clone + Send + Sync + 'static {}

/// The group governance port, as one adapter value that can be cloned into spawned tasks.
pub trait GroupStorage: GroupStore + Clone + Send + Sync + 'static {}

impl<S> GroupStorage for S where S: GroupStore + Clone + Send + Sync + 'static {}

/// The admin command ledger and abuse reports, as one adapter value that can be cloned into spawned tasks.
pub trait CommandStorage: CommandStore + ReportStore + Clone + Send + Sync + 'static {}

impl<S> CommandStorage for S where S: CommandStore + ReportStore + Clone + Send + Sync + 'static {}

/// A fresh store for one case, with the two tenants the case may write to.
pub struct Fixture<S> {
    pub store: S,
    /// The tenant most of a case's rows go to.
    pub tenant: TenantId,
    /// A second tenant, for isolation checks.
    pub other_tenant: TenantId,
    /// Kept alive, and dropped only after the store, for the length of the case.
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

impl<S> Fixture<S> {
    /// A fixture over `store` using tenants 1 and 2.
    pub fn new(store: S) -> Self {
        Self { store, tenant: TenantId::DEFAULT, other_tenant: TenantId(2), _guard: None }
    }

    /// A fixture that also keeps `guard` (a temporary directory, say) alive until the case ends.
    pub fn with_guard(store: S, guard: impl Any + Send + Sync) -> Self {
        Self { _guard: Some(Box::new(guard)), ..Self::new(store) }
    }

    /// Uses other tenant ids, for adapters whose cases share one database and must not see each other's rows.
    pub fn with_tenants(self, tenant: TenantId, other_tenant: TenantId) -> Self {
        Self { tenant, other_tenant, ..self }
    }
}

impl<S> From<S> for Fixture<S> {
    fn from(store: S) -> Self {
        Self::new(store)
    }
}
