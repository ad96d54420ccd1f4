//! The per-tenant batch writer: appends queue up for at most `batch_max_delay` (or until `batch_max_rows` are
//! waiting) and are written in one transaction, so a durable commit (one fsync of the redo log) is shared by the
//! whole batch instead of paid per message.
//!
//! Every caller awaits its own outcome on a oneshot channel, sent only after the transaction committed (or
//! failed): nothing is acknowledged that is not durable. The writer is one task per open tenant pool; it ends
//! when the pool's registry entry is dropped, and closes the pool on its way out.

use crate::append;
use palaver_core::ports::PendingAppend;
use palaver_core::{AppendOutcome, Message, StoreError, StoreResult};
use prometheus_client::metrics::histogram::Histogram;
use sqlx::MySqlPool;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::Instrument;

/// How the writer groups appends, and the histograms every tenant's writer adds to.
#[derive(Debug, Clone)]
pub(crate) struct BatchSettings {
    pub(crate) max_rows: usize,
    pub(crate) max_delay: Duration,
    pub(crate) metrics: BatchMetrics,
}

/// Rows per batch and the time each batch's transaction took.
#[derive(Debug, Clone)]
pub(crate) struct BatchMetrics {
    pub(crate) rows: Histogram,
    pub(crate) seconds: Histogram,
}

impl Default for BatchMetrics {
    fn default() -> Self {
        BatchMetrics {
            rows: Histogram::new([1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]),
            seconds: palaver_core::latency_histogram(),
        }
    }
}

/// The batch writers' histograms in the node's registry.
impl palaver_core::MetricsSource for crate::MysqlStore {
    fn register(&self, r: &mut palaver_core::Registry) {
        let m = self.inner.pools.batch_metrics();
        r.register("palaver_mysql_append_batch_rows", "Messages written per batch transaction", m.rows.clone());
        r.register(
            "palaver_mysql_append_batch_seconds",
            "Time of one batch transaction of message appends, commit included",
            m.seconds.clone(),
        );
    }
}

/// One queued append and where its outcome goes.
pub(crate) struct AppendRequest {
    pub(crate) msg: Message,
    pub(crate) reply: oneshot::Sender<StoreResult<AppendOutcome>>,
}

/// The sending side of a tenant's writer queue.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    queue: mpsc::Sender<AppendRequest>,
}

impl Writer {
    /// Starts the writer task for `pool`. The queue holds a few batches' worth of requests, so that callers
    /// wait for room (backpressure) when the database falls behind rather than piling up without bound.
    pub(crate) fn spawn(pool: MySqlPool, settings: BatchSettings) -> Writer {
        let (queue, requests) = mpsc::channel(settings.max_rows.saturating_mul(4).max(16));
        tokio::spawn(run(pool, settings, requests));
        Writer { queue }
    }

    /// Queues `msg` and waits for the outcome of the transaction it was written in.
    pub(crate) async fn append(&self, msg: Message) -> StoreResult<AppendOutcome> {
        self.queue(msg).await?.await
    }

    /// Queues `msg` (waiting only for room in the queue) and returns the outcome still to come. Requests leave
    /// the queue in the order they entered it and one batch commits before the next is written, so appends
    /// queued one after another are written in that order.
    pub(crate) async fn queue(&self, msg: Message) -> StoreResult<PendingAppend> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(AppendRequest { msg, reply })
            .await
            .map_err(|_| StoreError::Unavailable("the tenant's batch writer has stopped".to_owned()))?;
        Ok(PendingAppend::new(async move {
            // A writer that drops the reply without answering has not committed the message either.
            outcome
                .await
                .map_err(|_| StoreError::Unavailable("the tenant's batch writer stopped mid-batch".to_owned()))?
        }))
    }
}

/// The writer task: collects a batch, writes it, answers every caller, and repeats until the queue closes.
async fn run(pool: MySqlPool, settings: BatchSettings, mut requests: mpsc::Receiver<AppendRequest>) {
    while let Some(first) = requests.recv().await {
        let batch = collect(first, &mut requests, &settings).await;
        let rows = batch.len();
        let span = tracing::debug_span!("palaver.store.append_batch", rows);
        let started = Instant::now();
        let outcomes = append::write_batch(&pool, &batch).instrument(span).await;
        settings.metrics.seconds.observe(started.elapsed().as_secs_f64());
        settings.metrics.rows.observe(rows as f64);
        for (request, outcome) in batch.into_iter().zip(outcomes) {
            // A caller that gave up waiting no longer needs its answer; the row is stored either way.
            let _ = request.reply.send(outcome);
        }
    }
    pool.close().await;
}

/// Gathers `first` and whatever follows it within the delay, up to the row limit. Requests already queued are
/// taken at once; the delay only matters when the queue runs dry before the batch is full.
async fn collect(
    first: AppendRequest,
    requests: &mut mpsc::Receiver<AppendRequest>,
    settings: &BatchSettings,
) -> Vec<AppendRequest> {
    let deadline = Instant::now() + settings.max_delay;
    let mut batch = Vec::with_capacity(settings.max_rows.min(64));
    batch.push(first);
    while batch.len() < settings.max_rows {
        match requests.try_recv() {
            Ok(request) => {
                batch.push(request);
                continue;
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            Err(mpsc::error::TryRecvError::Empty) => {}
        }
        if settings.max_delay.is_zero() {
            break;
        }
        match tokio::time::timeout_at(deadline, requests.recv()).await {
            Ok(Some(request)) => batch.push(request),
            Ok(None) | Err(_) => break,
        }
    }
    batch
}
