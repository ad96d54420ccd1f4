//! Port traits, one per aggregate. Every call carries the tenant, so one adapter instance can serve many tenants
//! and no call can reach another tenant's rows or keys.
//!
//! Adapters implement these; `palaver-contract` holds the test suite each storage adapter must pass.

mod audit;
mod bus;
mod calls;
mod commands;
mod control;
mod credentials;
mod devices;
mod files;
mod gates;
mod groups;
mod health;
mod hooks;
mod idempotency;
mod listeners;
mod login_failures;
mod messages;
mod nodes;
mod notifications;
mod plugin_choices;
mod plugin_kv;
mod plugin_releases;
mod presence;
mod push;
mod queue;
mod relations;
mod reports;
mod rules;
mod scan;
mod seq;
mod settings;
mod subscriptions;
mod tenants;
mod topics;
mod users;

pub use audit::{AuditEvent, AuditStore};
pub use bus::{BusError, BusSink, BusTarget, Envelope, EventKind, RealtimeBus};
pub use calls::{Call, CallEnd, CallState, CallStore};
pub use commands::{Claim, CommandEnd, CommandRecord, CommandStatus, CommandStore};
pub use control::{ControlScope, ControlVersions, SessionControlStore};
pub use credentials::{
    Added, CodeMessage, CodePurpose, CodeSender, CodeStore, Credential, CredentialStore, Issued, Redeemed, SendError,
};
pub use devices::{DelayedPush, Device, DeviceStore};
pub use files::{BlobError, BlobRead, BlobStore, ByteStream, FileRecord, FileStatus, FileStore, blob_key};
pub use gates::{GateHook, GateVerdict, JoinContext, LoginContext};
pub use groups::{
    ADMIN_LIMIT, Announcement, AnnouncementDraft, AnnouncementView, GroupRole, GroupSettings, GroupStore, JoinDecision,
    JoinOutcome, JoinPolicy, JoinRequest, Mute, NOT_OWNER, OWNER_ROLE, RoleChange, RoleGrant, check_admin_limit,
};
pub use health::HealthCheck;
pub use hooks::{NoHooks, PublishContext, PublishHook, PublishVerdict, PushContext, PushDecision, PushHook};
pub use idempotency::IdempotencyStore;
pub use listeners::{AccountChange, EventHook, ListenerFailure, ListenerKind, PluginEvent};
pub use login_failures::{Backoff, LoginFailureStore};
pub use messages::{MessageStore, OwedFor, PendingAppend, nothing_owed};
pub use nodes::{NodeError, NodeInfo, NodeRegistry};
pub use notifications::{NewNotification, Notification, NotificationStore};
pub use plugin_choices::{PluginChoice, PluginChoiceStore};
pub use plugin_kv::{KvError, KvOp, KvQuota, KvScope, KvUsage, KvWrite, PluginKv, entry_bytes, plan, touched};
pub use plugin_releases::{Canary, NodeReport, PluginRelease, PluginReleaseStore, PluginRollout, ReleaseInfo};
pub use presence::{PresenceStore, SessionBeat};
pub use push::{MAX_MENTIONS, PushDedup, PushError, PushMessage, PushProvider, PushTask, mentions_of};
pub use queue::{Delivery, OutboxEntry, OutboxStore, QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
pub use relations::{
    Block, CreateOutcome, Decision, Friend, FriendRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, Relation,
    RelationStore, RequestStatus,
};
pub use reports::{NewReport, REPORT_CLOSED, Report, ReportStore, ReportTarget, Resolution};
pub use rules::{BusinessRules, ClientCommandDoc, ClientCommandState, NoRules, RuleVerdict};
pub use scan::{FileScanner, ScanContext, ScanError, ScanHook, ScanVerdict};
pub use seq::SeqAllocator;
pub use settings::{MAX_SETTING_BYTES, SettingsStore};
pub use subscriptions::SubscriptionStore;
pub use tenants::TenantStore;
pub use topics::TopicStore;
pub use users::{Identity, UserStore};

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
    pub hooks: Arc<dyn PublishHook>,
    /// Decides, per recipient, whether the push worker sends an offline push (plugins' `before-push`).
    pub push_hook: Arc<dyn PushHook>,
    /// Judges uploads by their metadata and first bytes (plugins' `scan-file`).
    pub scan_hook: Arc<dyn ScanHook>,
    /// Admits logins and joins (plugins' `on-login` and `before-subscribe`).
    pub gates: Arc<dyn GateHook>,
    /// Takes stored messages and account changes off the request path (plugins' `after-publish`, `on-account`).
    pub listeners: Arc<dyn EventHook>,
    /// Scans uploads' whole bytes (ClamAV); `None`: no such scanner is configured.
    pub scanner: Option<Arc<dyn FileScanner>>,
    pub business: BusinessPorts,
    /// Records owed to the task queue (audit, summaries, results), relayed to it by a background task.
    pub outbox: Arc<dyn OutboxStore>,
    /// The users' push devices (`{hi dev}`), read by the push worker.
    pub devices: Arc<dyn DeviceStore>,
    /// One-to-one calls (`{pub head:{webrtc}}` and `{note what:"call"}`), in the tenant's database.
    pub calls: Arc<dyn CallStore>,
    /// Each tenant's settings documents (its own push providers), in the tenant's database.
    pub settings: Arc<dyn SettingsStore>,
    /// Uploaded files' records and the messages that reference them, in the tenant's database.
    pub files: Arc<dyn FileStore>,
    /// Uploaded files' bytes (the local filesystem or S3-compatible object storage).
    pub blobs: Arc<dyn BlobStore>,
    /// Failed-login counters shared by the nodes (Redis in scale-out mode); `None`: each node counts in process.
    pub login_failures: Option<Arc<dyn LoginFailureStore>>,
    /// The accounts' email addresses and phone numbers, in the tenant's database.
    pub credentials: Arc<dyn CredentialStore>,
    /// Confirmation and reset codes: Redis in scale-out mode, process memory in the embedded one.
    pub codes: Arc<dyn CodeStore>,
    /// Who delivers codes, by method (`email`, `tel`); a method without a sender is not enabled.
    pub code_senders: std::collections::BTreeMap<String, Arc<dyn CodeSender>>,
}

/// What the business commands (friends, group governance, notifications) stand on: the stores they write and
/// the rules that decide them.
#[derive(Clone)]
pub struct BusinessPorts {
    pub relations: Arc<dyn RelationStore>,
    pub groups: Arc<dyn GroupStore>,
    pub notifications: Arc<dyn NotificationStore>,
    /// Admin commands, one row per command id (exactly one effect each).
    pub commands: Arc<dyn CommandStore>,
    /// Users' abuse reports.
    pub reports: Arc<dyn ReportStore>,
    pub rules: Arc<dyn BusinessRules>,
}

impl BusinessPorts {
    /// Every store from one adapter instance, with the given rules.
    pub fn of<S>(store: Arc<S>, rules: Arc<dyn BusinessRules>) -> BusinessPorts
    where
        S: RelationStore + GroupStore + NotificationStore + CommandStore + ReportStore + 'static,
    {
        BusinessPorts {
            relations: store.clone(),
            groups: store.clone(),
            notifications: store.clone(),
            commands: store.clone(),
            reports: store,
            rules,
        }
    }
}
