//! The in-memory storage adapter: users and their credentials, topics, subscriptions and messages in
//! tenant-scoped maps.
//!
//! All the storage ports (and the relation, group and notification ports) share one lock over one map of
//! tenants. That makes every port call atomic with respect to the others (a topic delete and an append never
//! interleave), which is what the SQL adapters get from transactions.

mod commands;
mod credentials;
mod groups;
mod messages;
mod notifications;
mod relations;
mod reports;
mod subs;
mod topics;
mod users;

use palaver_core::StoreResult;
use palaver_core::ports::{OutboxEntry, OutboxStore, QueueRecord};
use palaver_core::{AuthRecord, Message, Seq, SeqRange, Subscription, TenantId, Topic, UnixMillis, User, UserId};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A user id in the order the SQL adapters list their `BIGINT` columns by: reinterpreted as signed, so every
/// adapter lists and pages users in the same order.
fn signed(u: UserId) -> i64 {
    u.0 as i64
}

/// Users, topics, subscriptions and messages kept in memory. Cloning is cheap and clones share the data.
#[derive(Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<HashMap<TenantId, TenantData>>>,
    /// Where admin results and summaries go (`CommandStore::finish`, the report writes), read by the relay.
    outbox: crate::MemoryOutbox,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose command, report and audited writes append to `outbox`: a caller that reads the
    /// outbox (a relay, a test) sees what each state change owed.
    pub fn with_outbox(outbox: crate::MemoryOutbox) -> Self {
        Self { inner: Arc::default(), outbox }
    }

    /// The outbox the command and report writes append to.
    pub fn outbox(&self) -> &crate::MemoryOutbox {
        &self.outbox
    }

    /// Appends what a state change owes the queue to the outbox, after that change.
    async fn owe(&self, tenant: TenantId, owed: &[QueueRecord]) -> StoreResult<()> {
        if owed.is_empty() { Ok(()) } else { self.outbox.put(tenant, owed).await }
    }

    /// Runs `f` on the tenant's data under the lock. The closure is synchronous, so the lock can never be held
    /// across an await.
    fn with_tenant<R>(&self, tenant: TenantId, f: impl FnOnce(&mut TenantData) -> R) -> R {
        let mut guard = self.inner.lock();
        f(guard.entry(tenant).or_default())
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

/// Everything one tenant owns. Nothing in here refers to another tenant, which is what isolates them.
#[derive(Default)]
struct TenantData {
    users: BTreeMap<UserId, User>,
    /// Credentials keyed by lower-cased login.
    auth: HashMap<String, AuthRecord>,
    /// The login of each user that has a basic credential, to find it from the user id.
    login_of: HashMap<UserId, String>,
    /// External id → account, and back.
    external: HashMap<String, UserId>,
    external_of: HashMap<UserId, String>,
    topics: BTreeMap<String, Topic>,
    /// Subscriptions keyed by (topic, user), so a topic's members are one contiguous range.
    subs: BTreeMap<(String, UserId), Subscription>,
    history: HashMap<String, History>,
    relations: relations::Relations,
    groups: groups::Groups,
    notifications: notifications::Notifications,
    commands: HashMap<String, palaver_core::ports::CommandRecord>,
    reports: reports::Reports,
    /// Email addresses and phone numbers of the accounts, and who confirmed each.
    credentials: credentials::Credentials,
}

/// One topic's stored messages and deletion log.
#[derive(Default)]
struct History {
    messages: BTreeMap<Seq, StoredMessage>,
    /// The seq stored under each (sender, client_mid) key.
    by_client_mid: HashMap<(UserId, String), Seq>,
    dellog: Vec<DelLogEntry>,
}

/// A message with its hard-delete marker; a hard-deleted message keeps its slot but loses its content.
struct StoredMessage {
    message: Message,
    deleted_at: Option<UnixMillis>,
}

/// One range of one deletion transaction. `deleted_for` is `None` for a deletion for everyone.
#[derive(Clone, Copy)]
struct DelLogEntry {
    del_id: i64,
    deleted_for: Option<UserId>,
    range: SeqRange,
}

/// The store's outbox, read through the store itself, so that a contract case can see what a state change owed.
#[async_trait::async_trait]
impl OutboxStore for MemoryStore {
    async fn put(&self, tenant: TenantId, records: &[QueueRecord]) -> StoreResult<()> {
        self.outbox.put(tenant, records).await
    }
    async fn pending(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<OutboxEntry>> {
        self.outbox.pending(tenant, limit).await
    }
    async fn remove(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()> {
        self.outbox.remove(tenant, ids).await
    }
    async fn depth(&self, tenant: TenantId) -> StoreResult<u64> {
        self.outbox.depth(tenant).await
    }
    async fn lease(&self, tenant: TenantId, owner: &str, ttl_ms: i64) -> StoreResult<bool> {
        self.outbox.lease(tenant, owner, ttl_ms).await
    }
}
