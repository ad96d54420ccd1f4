//! The task queue and its outbox: durable, keyed records between the nodes and the back office (admin commands
//! and their results, summaries, audit, push and file tasks, plugin events, dead letters). Kafka in scale-out, a SQLite table
//! when embedded. Never on the realtime path: fanout to sessions stays on the `RealtimeBus`.
//!
//! Delivery is at least once. A consumer commits a record only after its effect is durable, so a crash between
//! the effect and the commit redelivers it; every consumer is therefore idempotent by the record's own id.
//! Records with the same key keep their order (one partition per key).

use crate::{StoreResult, TenantId};

/// The queue's topics by role. Adapters map each to its configured name (`kafka.topics.*`); the defaults are
/// [`QueueTopic::default_name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueTopic {
    /// Commands from the Admin side to any node (one consumer group across the nodes).
    AdminCommand,
    /// One result per command, back to the Admin side.
    AdminResult,
    /// Summaries of state changes the Admin side lists (user state, groups, member counts, reports).
    AdminEvent,
    /// Who did what: consumed into the tenant's `audit_log`.
    Audit,
    /// Offline push tasks.
    Push,
    /// File security (scanning, review) tasks.
    FileSecurity,
    /// Stored messages and account changes for the listening plugins (`after-publish`, `on-account`).
    PluginEvent,
    /// Records no consumer could process, with the reason in the headers.
    DeadLetter,
}

impl QueueTopic {
    /// Every topic, in declaration order.
    pub const ALL: [QueueTopic; 8] = [
        QueueTopic::AdminCommand,
        QueueTopic::AdminResult,
        QueueTopic::AdminEvent,
        QueueTopic::Audit,
        QueueTopic::Push,
        QueueTopic::FileSecurity,
        QueueTopic::PluginEvent,
        QueueTopic::DeadLetter,
    ];

    /// The stable role name, used as the outbox's topic column and in metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueTopic::AdminCommand => "admin_command",
            QueueTopic::AdminResult => "admin_result",
            QueueTopic::AdminEvent => "admin_event",
            QueueTopic::Audit => "audit",
            QueueTopic::Push => "push",
            QueueTopic::FileSecurity => "file_security",
            QueueTopic::PluginEvent => "plugin_event",
            QueueTopic::DeadLetter => "dead_letter",
        }
    }

    /// The inverse of [`QueueTopic::as_str`].
    pub fn parse(role: &str) -> Option<QueueTopic> {
        QueueTopic::ALL.into_iter().find(|t| t.as_str() == role)
    }

    /// The broker topic name used when the configuration names none.
    pub fn default_name(self) -> &'static str {
        match self {
            QueueTopic::AdminCommand => "im.admin.command",
            QueueTopic::AdminResult => "im.admin.command.result",
            QueueTopic::AdminEvent => "im.admin.event",
            QueueTopic::Audit => "im.audit",
            QueueTopic::Push => "im.push.task",
            QueueTopic::FileSecurity => "im.file.security",
            QueueTopic::PluginEvent => "im.plugin.event",
            QueueTopic::DeadLetter => "im.dlq",
        }
    }
}

/// One record to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecord {
    pub topic: QueueTopic,
    /// Records with equal keys keep their order. Producers put the tenant first (`{tenant}:{target}`).
    pub key: String,
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl QueueRecord {
    /// A record without headers.
    pub fn new(topic: QueueTopic, key: impl Into<String>, payload: Vec<u8>) -> QueueRecord {
        QueueRecord { topic, key: key.into(), headers: Vec::new(), payload }
    }

    /// The value of header `name`, if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A record as consumed: where it sits, so it can be committed and named in a dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub record: QueueRecord,
    pub partition: i32,
    pub offset: i64,
}

impl Delivery {
    /// This record as a dead letter: its key, payload and headers, plus where it sat and why (`dlq.topic`, the
    /// role it was consumed from; `dlq.partition`, `dlq.offset`, `dlq.error`).
    pub fn dead_letter(&self, reason: &str) -> QueueRecord {
        let mut record = QueueRecord::new(QueueTopic::DeadLetter, self.record.key.clone(), self.record.payload.clone());
        record.headers = self.record.headers.clone();
        record.headers.extend([
            ("dlq.topic".to_owned(), self.record.topic.as_str().to_owned()),
            ("dlq.partition".to_owned(), self.partition.to_string()),
            ("dlq.offset".to_owned(), self.offset.to_string()),
            ("dlq.error".to_owned(), reason.to_owned()),
        ]);
        record
    }
}

/// The queue. `Unavailable` from any call is transient: the caller retries with backoff.
#[async_trait::async_trait]
pub trait TaskQueue: Send + Sync {
    /// Produces one record. `Ok` only once the queue holds it durably (all in-sync replicas for Kafka, a
    /// committed row when embedded).
    async fn produce(&self, record: QueueRecord) -> StoreResult<()>;

    /// Produces records in order, `Ok` once all are durable. On `Err` a leading part may be durable already, so
    /// the caller produces them again (consumers are idempotent). Adapters may overlap the records in flight as
    /// long as records of one key stay in order.
    async fn produce_batch(&self, records: Vec<QueueRecord>) -> StoreResult<()> {
        for record in records {
            self.produce(record).await?;
        }
        Ok(())
    }

    /// Joins consumer group `group` on `topic`. Members of one group share the topic's partitions; a new
    /// member starts after the group's last commit (or at the beginning when it has none).
    async fn subscribe(&self, topic: QueueTopic, group: &str) -> StoreResult<Box<dyn QueueConsumer>>;
}

/// One member of a consumer group.
#[async_trait::async_trait]
pub trait QueueConsumer: Send {
    /// The next record, waiting for one. Records of one partition come in offset order.
    async fn next(&mut self) -> StoreResult<Delivery>;

    /// Commits `delivery` and everything before it in its partition: the group will not see them again.
    async fn commit(&mut self, delivery: &Delivery) -> StoreResult<()>;

    /// How many records [`Self::next`] returns next without waiting on the queue (already fetched); 0 when the
    /// adapter cannot tell. A caller may defer its commit while this is above 0 and commit once the batch is
    /// done, which is one offset write per batch instead of per record.
    fn buffered(&self) -> usize {
        0
    }
}

/// A record written to the outbox, waiting for the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// Increasing in write order within a tenant; the relay produces a tenant's entries in this order.
    pub id: i64,
    pub tenant: TenantId,
    pub record: QueueRecord,
    /// Unix ms of the write.
    pub created_at: i64,
}

/// Records waiting to reach the queue, kept in the tenant's own database so that a state change and the
/// records it owes can commit together, and the queue being down loses nothing.
#[async_trait::async_trait]
pub trait OutboxStore: Send + Sync {
    /// Appends records for the relay, durably when `Ok`.
    async fn put(&self, tenant: TenantId, records: &[QueueRecord]) -> StoreResult<()>;

    /// Up to `limit` of the tenant's oldest entries, in id order.
    async fn pending(&self, tenant: TenantId, limit: usize) -> StoreResult<Vec<OutboxEntry>>;

    /// Removes the entries the relay produced.
    async fn remove(&self, tenant: TenantId, ids: &[i64]) -> StoreResult<()>;

    /// How many entries the tenant has waiting.
    async fn depth(&self, tenant: TenantId) -> StoreResult<u64>;

    /// Takes or renews the tenant's relay lease for `owner` until `now + ttl_ms`. `Ok(true)` when `owner` holds it
    /// now (it was free, expired, or already `owner`'s); `Ok(false)` while another owner's lease runs. One relay per
    /// tenant at a time keeps the tenant's entries in id order when several nodes share its database.
    async fn lease(&self, tenant: TenantId, owner: &str, ttl_ms: i64) -> StoreResult<bool>;
}
