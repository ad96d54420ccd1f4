//! The embedded task queue: records in a SQLite table, so the embedded default runs the same consumers as a
//! Kafka deployment with no service to run and loses nothing on a crash (migration 0006).
//!
//! Each topic is one partition whose offsets are the rows' ids (rising, never reused). A group's committed offset
//! per topic is a row in `queue_offsets`; a consumer starts there and reads on without committing, as a Kafka
//! consumer does, so an uncommitted record is delivered again only to the next member of the group (after a
//! restart, say). Members of one group do not split the topic: run one member per group.
//!
//! A waiting consumer is woken by a produce in this process (a `Notify`) and otherwise looks again every
//! [`POLL_FALLBACK`], which catches records another process wrote to the same file without busy-polling.

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
use tokio::sync::Notify;

/// How often a waiting consumer looks for records produced by another process.
pub const POLL_FALLBACK: Duration = Duration::from_secs(1);

/// How long records are kept, like a Kafka topic's retention; older ones are pruned whether consumed or not.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Records read per query.
const BATCH: i64 = 100;

/// Produces between two prunes of expired records.
const PRUNE_EVERY: u64 = 1000;

/// The embedded queue over a [`SqliteStore`]'s file. Clones share the wake-ups.
#[derive(Clone)]
pub struct SqliteQueue {
    store: SqliteStore,
    produced: Arc<Notify>,
    retention: Duration,
    produces: Arc<AtomicU64>,
}

impl SqliteQueue {
    /// The queue in `store`'s database, keeping records for [`DEFAULT_RETENTION`].
    pub fn new(store: SqliteStore) -> SqliteQueue {
        SqliteQueue::with_retention(store, DEFAULT_RETENTION)
    }

    pub fn with_retention(store: SqliteStore, retention: Duration) -> SqliteQueue {
        SqliteQueue { store, produced: Arc::new(Notify::new()), retention, produces: Arc::new(AtomicU64::new(0)) }
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
        Ok(done.rows_affected())
    }
}

#[async_trait]
impl TaskQueue for SqliteQueue {
    async fn produce(&self, r: QueueRecord) -> StoreResult<()> {
        // Autocommitted on the one writer connection: `Ok` means the row is in the WAL.
        sqlx::query("INSERT INTO queue_records (topic, msg_key, headers, payload, created_at) VALUES (?, ?, ?, ?, ?)")
            .bind(r.topic.as_str())
            .bind(&r.key)
            .bind(headers_col(&r.headers))
            .bind(&r.payload)
            .bind(now_millis())
            .execute(&self.store.writer)
            .await
            .map_err(db_error)?;
        self.produced.notify_waiters();
        self.produced_some(1).await;
        Ok(())
    }

    async fn produce_batch(&self, records: Vec<QueueRecord>) -> StoreResult<()> {
        if records.is_empty() {
            return Ok(());
        }
        // One transaction: the batch commits whole, its ids in order.
        let mut tx = self.store.begin_write().await?;
        let now = now_millis();
        for r in &records {
            sqlx::query(
                "INSERT INTO queue_records (topic, msg_key, headers, payload, created_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(r.topic.as_str())
            .bind(&r.key)
            .bind(headers_col(&r.headers))
            .bind(&r.payload)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)?;
        self.produced.notify_waiters();
        self.produced_some(records.len() as u64).await;
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
        }))
    }
}

struct SqliteConsumer {
    queue: SqliteQueue,
    topic: QueueTopic,
    group: String,
    /// The smallest offset this member has not read yet.
    next: i64,
    buffered: VecDeque<Delivery>,
}

impl SqliteConsumer {
    async fn fetch(&mut self) -> StoreResult<()> {
        let rows: Vec<(i64, String, String, Vec<u8>)> = sqlx::query_as(
            "SELECT id, msg_key, headers, payload FROM queue_records WHERE topic = ? AND id >= ? ORDER BY id LIMIT ?",
        )
        .bind(self.topic.as_str())
        .bind(self.next)
        .bind(BATCH)
        .fetch_all(&self.queue.store.pool)
        .await
        .map_err(db_error)?;
        for (id, key, headers, payload) in rows {
            let record = record_of(self.topic.as_str(), key, &headers, payload).map_err(StoreError::from)?;
            self.next = id + 1;
            self.buffered.push_back(Delivery { record, partition: 0, offset: id });
        }
        Ok(())
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
            let woken = produced.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            self.fetch().await?;
            if self.buffered.is_empty() {
                let _ = tokio::time::timeout(POLL_FALLBACK, woken).await;
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
