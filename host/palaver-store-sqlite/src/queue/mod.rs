//! The embedded task queue: records in a SQLite table, so the embedded default runs the same consumers as a
//! Kafka deployment with no service to run and loses nothing on a crash (migration 0006).
//!
//! Each topic is one partition whose offsets are the rows' ids (rising, never reused). A group's committed offset
//! per topic is a row in `queue_offsets`; a consumer starts there and reads on without committing, as a Kafka
//! consumer does, so an uncommitted record is delivered again only to the next member of the group (after a
//! restart, say). Members of one group do not split the topic: run one member per group.
//!
//! A batch is one `INSERT … RETURNING id` per [`INSERT_ROWS`] records: one round trip to the writer's thread
//! rather than one per record. What this process produced is also kept in memory ([`tail`]), and a consumer here
//! reads it from there when memory can prove it skips nothing; otherwise it queries the file. A waiting consumer
//! is woken by a produce of its topic in this process (one `Notify` per topic: a busy topic does not wake the
//! consumers of the quiet ones) and otherwise queries the file every [`POLL_FALLBACK`], which catches records
//! another process wrote to the same file without busy-polling.
//!
//! A query that reaches the end of the topic also moves the consumer past the ids of other topics up to the
//! highest id the file had handed out ([`SqliteConsumer::fetch`]). Without it a consumer of a quiet topic would
//! stay behind the start of memory's run and query the file at each look, for nothing.

mod adopt;
mod tail;

pub use adopt::Adopted;

use crate::SqliteStore;
use crate::error::db_error;
use async_trait::async_trait;
use palaver_core::ports::{Delivery, QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
use palaver_core::{StoreError, StoreResult, now_millis};
use palaver_store_sql::queue::{headers_col, record_of};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tail::{Look, Tail};
use tokio::sync::Notify;

/// How often a waiting consumer looks for records produced by another process.
pub const POLL_FALLBACK: Duration = Duration::from_secs(1);

/// How long records are kept, like a Kafka topic's retention; older ones are pruned whether consumed or not.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Records read per query (or from memory) at most.
const BATCH: usize = 100;

/// Records per insert statement: five parameters each, well under SQLite's 32766.
const INSERT_ROWS: usize = 256;

/// Produces between two prunes of expired records.
const PRUNE_EVERY: u64 = 1000;

/// The embedded queue over a [`SqliteStore`]'s file. Clones share the wake-ups.
#[derive(Clone)]
pub struct SqliteQueue {
    store: SqliteStore,
    /// Wakes the consumers of one topic, by [`slot`].
    produced: Arc<[Notify; QueueTopic::ALL.len()]>,
    retention: Duration,
    produces: Arc<AtomicU64>,
    tail: Arc<Tail>,
}

impl SqliteQueue {
    /// The queue in `store`'s database, keeping records for [`DEFAULT_RETENTION`].
    pub fn new(store: SqliteStore) -> SqliteQueue {
        SqliteQueue::with_retention(store, DEFAULT_RETENTION)
    }

    pub fn with_retention(store: SqliteStore, retention: Duration) -> SqliteQueue {
        SqliteQueue {
            store,
            produced: Arc::new(std::array::from_fn(|_| Notify::new())),
            retention,
            produces: Arc::new(AtomicU64::new(0)),
            tail: Arc::default(),
        }
    }

    /// Counts produced records and prunes expired ones every [`PRUNE_EVERY`] of them.
    async fn produced_some(&self, n: u64) {
        let before = self.produces.fetch_add(n, Ordering::Relaxed);
        if before / PRUNE_EVERY != (before + n) / PRUNE_EVERY
            && let Err(err) = self.prune().await
        {
            tracing::warn!(%err, "pruning the embedded queue failed");
        }
    }

    /// Deletes records older than the retention.
    pub async fn prune(&self) -> StoreResult<u64> {
        let cutoff = now_millis().saturating_sub(self.retention.as_millis() as i64);
        let done = sqlx::query("DELETE FROM queue_records WHERE created_at < ?")
            .bind(cutoff)
            .execute(&self.store.writer)
            .await
            .map_err(db_error)?;
        self.tail.prune(cutoff);
        Ok(done.rows_affected())
    }

    /// Inserts `records` in one statement (autocommitted on the one writer connection: `Ok` means the rows are
    /// in the WAL) and moves them into memory.
    async fn insert(&self, records: Vec<QueueRecord>) -> StoreResult<()> {
        let mut sql = String::from("INSERT INTO queue_records (topic, msg_key, headers, payload, created_at) VALUES ");
        for i in 0..records.len() {
            sql.push_str(if i == 0 { "(?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?)" });
        }
        sql.push_str(" RETURNING id");
        let now = now_millis();
        // Built from placeholders only: every value is bound.
        let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql));
        for r in &records {
            query = query.bind(r.topic.as_str()).bind(&r.key).bind(headers_col(&r.headers)).bind(&r.payload).bind(now);
        }
        let mut ids = query.fetch_all(&self.store.writer).await.map_err(db_error)?;
        // RETURNING promises no order; one statement's rows take rising ids in the order of its VALUES.
        ids.sort_unstable();
        self.tail.produced(&ids, records);
        Ok(())
    }
}

#[async_trait]
impl TaskQueue for SqliteQueue {
    async fn produce(&self, r: QueueRecord) -> StoreResult<()> {
        self.produce_batch(vec![r]).await
    }

    async fn produce_batch(&self, mut records: Vec<QueueRecord>) -> StoreResult<()> {
        // Each statement commits whole, its ids in order; a failure leaves the earlier chunks durable, which the
        // port allows (the caller produces again and consumers are idempotent).
        let n = records.len() as u64;
        let topics: Vec<QueueTopic> =
            QueueTopic::ALL.into_iter().filter(|t| records.iter().any(|r| r.topic == *t)).collect();
        while !records.is_empty() {
            let rest = records.split_off(records.len().min(INSERT_ROWS));
            self.insert(records).await?;
            records = rest;
        }
        if n > 0 {
            for topic in topics {
                self.produced[slot(topic)].notify_waiters();
            }
            self.produced_some(n).await;
        }
        Ok(())
    }

    async fn subscribe(&self, topic: QueueTopic, group: &str) -> StoreResult<Box<dyn QueueConsumer>> {
        let next: Option<i64> = sqlx::query_scalar("SELECT next FROM queue_offsets WHERE group_id = ? AND topic = ?")
            .bind(group)
            .bind(topic.as_str())
            .fetch_optional(&self.store.pool)
            .await
            .map_err(db_error)?;
        Ok(Box::new(SqliteConsumer {
            queue: self.clone(),
            topic,
            group: group.to_owned(),
            next: next.unwrap_or(0),
            buffered: VecDeque::new(),
            query: true,
        }))
    }
}

/// The index of `topic`'s wake-up in [`SqliteQueue::produced`].
fn slot(topic: QueueTopic) -> usize {
    QueueTopic::ALL.iter().position(|t| *t == topic).unwrap_or(0)
}

/// A row of a consumer's query: the file's highest id, then the record's columns (none when nothing is new).
type Row = (i64, Option<i64>, Option<String>, Option<String>, Option<Vec<u8>>);

struct SqliteConsumer {
    queue: SqliteQueue,
    topic: QueueTopic,
    group: String,
    /// The smallest offset this member has not read yet.
    next: i64,
    buffered: VecDeque<Delivery>,
    /// Whether the next look queries the file: the first after subscribing, and each after a quiet
    /// [`POLL_FALLBACK`].
    query: bool,
}

impl SqliteConsumer {
    /// Buffers what comes next: from memory when it can tell, else (or with `query`) from the file. False when
    /// memory says nothing new came from this process, so there was no need to query.
    async fn fetch(&mut self, query: bool) -> StoreResult<bool> {
        if !query {
            match self.queue.tail.look(self.topic, self.next, BATCH) {
                Look::Records(records) => {
                    for (offset, record) in records {
                        self.next = offset + 1;
                        self.buffered.push_back(Delivery { record, partition: 0, offset });
                    }
                    return Ok(true);
                }
                Look::UpToDate => return Ok(false),
                Look::Unknown => {}
            }
        }
        // One statement, so one snapshot: the topic's next records, and the highest id the file has handed out
        // (AUTOINCREMENT: at least every id in the snapshot; any id committed later is above it). The join keeps
        // that row when the topic has nothing new.
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT s.high, r.id, r.msg_key, r.headers, r.payload \
             FROM (SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'queue_records'), 0) AS high) AS s \
             LEFT JOIN (SELECT id, msg_key, headers, payload FROM queue_records \
                        WHERE topic = ? AND id >= ? ORDER BY id LIMIT ?) AS r ON 1 \
             ORDER BY r.id",
        )
        .bind(self.topic.as_str())
        .bind(self.next)
        .bind(BATCH as i64)
        .fetch_all(&self.queue.store.pool)
        .await
        .map_err(db_error)?;
        let (mut high, mut read) = (0, 0);
        for (top, id, key, headers, payload) in rows {
            high = top;
            let (Some(id), Some(key), Some(headers), Some(payload)) = (id, key, headers, payload) else { continue };
            let record = record_of(self.topic.as_str(), key, &headers, payload).map_err(StoreError::from)?;
            self.next = id + 1;
            self.buffered.push_back(Delivery { record, partition: 0, offset: id });
            read += 1;
        }
        if read < BATCH {
            // The topic has nothing more up to `high`: every id from here to it is another topic's (or was rolled
            // back), so skipping them skips nothing. It also brings the consumer inside memory's run, where a look
            // can say "up to date" without a query.
            self.next = self.next.max(high + 1);
        }
        Ok(true)
    }
}

#[async_trait]
impl QueueConsumer for SqliteConsumer {
    async fn next(&mut self) -> StoreResult<Delivery> {
        loop {
            if let Some(d) = self.buffered.pop_front() {
                return Ok(d);
            }
            // Registered before looking, so a produce between the look and the wait is not missed.
            let produced = self.queue.produced.clone();
            let woken = produced[slot(self.topic)].notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            self.fetch(self.query).await?;
            self.query = false;
            if self.buffered.is_empty() {
                self.query = tokio::time::timeout(POLL_FALLBACK, woken).await.is_err();
            }
        }
    }

    fn buffered(&self) -> usize {
        self.buffered.len()
    }

    async fn commit(&mut self, delivery: &Delivery) -> StoreResult<()> {
        // Never moves back: committing an older delivery after a newer one keeps the newer commit.
        sqlx::query(
            "INSERT INTO queue_offsets (group_id, topic, next) VALUES (?1, ?2, ?3) \
             ON CONFLICT (group_id, topic) DO UPDATE SET next = MAX(next, excluded.next)",
        )
        .bind(&self.group)
        .bind(self.topic.as_str())
        .bind(delivery.offset + 1)
        .execute(&self.queue.store.writer)
        .await
        .map_err(db_error)?;
        Ok(())
    }
}
