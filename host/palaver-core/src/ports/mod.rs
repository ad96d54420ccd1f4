//! Port traits, one per aggregate. Every call carries the tenant, so one adapter instance can serve many tenants
//! and no call can reach another tenant's rows or keys.
//!
//! Adapters implement these; `palaver-contract` holds the test suite each storage adapter must pass.

mod bus;
mod control;
mod groups;
mod hooks;
mod idempotency;
mod messages;
mod nodes;
mod notifications;
mod presence;
mod relations;
mod rules;
mod seq;
mod subscriptions;
mod tenants;
mod topics;
mod users;

pub use bus::{BusError, BusSink, BusTarget, Envelope, EventKind, RealtimeBus, TopicCarrier};
pub use control::{ControlScope, ControlVersions, SessionControlStore};
pub use groups::{
    ADMIN_LIMIT, Announcement, AnnouncementDraft, AnnouncementView, GroupRole, GroupSettings, GroupStore, JoinDecision,
    JoinOutcome, JoinPolicy, JoinRequest, Mute, NOT_OWNER, OWNER_ROLE, RoleChange, RoleGrant, check_admin_limit,
};
pub use hooks::{NoHooks, PublishContext, PublishHook, PublishVerdict};
pub use idempotency::IdempotencyStore;
pub use messages::MessageStore;
pub use nodes::{NodeError, NodeInfo, NodeRegistry};
pub use notifications::{NewNotification, Notification, NotificationStore};
pub use presence::{PresenceStore, SessionBeat};
pub use relations::{
    Block, CreateOutcome, Decision, Friend, FriendRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, Relation,
    RelationStore, RequestStatus,
};
pub use rules::{BusinessRules, NoRules, RuleVerdict};
pub use seq::SeqAllocator;
pub use subscriptions::SubscriptionStore;
pub use tenants::TenantStore;
pub use topics::TopicStore;
pub use users::UserStore;

use std::sync::Arc;

/// The storage ports a node needs, usually all backed by one adapter instance.
#[derive(Clone)]
pub struct Ports {
    pub users: Arc<dyn UserStore>,
    pub topics: Arc<dyn TopicStore>,
    pub subs: Arc<dyn SubscriptionStore>,
    pub messages: Arc<dyn MessageStore>,
    pub seq: Arc<dyn SeqAllocator>,
    pub idempotency: Arc<dyn IdempotencyStore>,
    pub presence: Arc<dyn PresenceStore>,
    pub bus: Arc<dyn RealtimeBus>,
    pub control: Arc<dyn SessionControlStore>,
    /// Carries topic events instead of the bus in a native-cluster mode; `None` in standalone mode.
    pub topic_carrier: Option<Arc<dyn TopicCarrier>>,
    pub hooks: Arc<dyn PublishHook>,
    pub business: BusinessPorts,
}

/// What the business commands (friends, group governance, notifications) stand on: the tables they write and
/// the rules that decide them.
#[derive(Clone)]
pub struct BusinessPorts {
    pub relations: Arc<dyn RelationStore>,
    pub groups: Arc<dyn GroupStore>,
    pub notifications: Arc<dyn NotificationStore>,
    pub rules: Arc<dyn BusinessRules>,
}

impl BusinessPorts {
    /// All three stores from one adapter instance, with the given rules.
    pub fn of<S>(store: Arc<S>, rules: Arc<dyn BusinessRules>) -> BusinessPorts
    where
        S: RelationStore + GroupStore + NotificationStore + 'static,
    {
        BusinessPorts { relations: store.clone(), groups: store.clone(), notifications: store, rules }
    }
}
