//! The batch writer (group commit): message appends queue up and are written in one `BEGIN IMMEDIATE`
//! transaction, so that one commit, one append of the touched pages to the WAL, carries every message that
//! queued while the previous batch was being written. No delay is added: under light load a batch is one row,
//! and a batch grows only when appends arrive faster than commits.
//!
//! Every caller awaits its own outcome, sent only after the transaction committed (or failed): nothing is
//! reported stored that is not. A row the schema refuses (a unique key, a missing topic) fails that statement
//! alone: SQLite backs out the one statement and keeps the transaction, so its neighbours still commit. Any
//! other failure fails the whole batch. Requests are written in the order they were queued.

use crate::codec::{risk_flags_col, tenant, user_col};
use crate::error::db_error;
use crate::messages::Table;
use palaver_core::ports::PendingAppend;
use palaver_core::{AppendOutcome, Message, StoreError, StoreResult, TenantId};
use serde_json::Value;
use sqlx::{SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

/// The most rows one transaction carries; the rest wait for the next.
const MAX_ROWS: usize = 256;

/// One queued append and where its outcome goes.
struct AppendRequest {
    tenant: TenantId,
    msg: Message,
    reply: oneshot::Sender<StoreResult<AppendOutcome>>,
}

/// The sending side of the writer's queue. The task ends when every clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    queue: mpsc::Sender<AppendRequest>,
}

impl Writer {
    /// Starts the writer task on `pool` (the store's one writer connection). The queue holds a few batches'
    /// worth, so that callers wait for room when the disk falls behind rather than piling up without bound.
    pub(crate) fn spawn(pool: SqlitePool) -> Writer {
        let (queue, requests) = mpsc::channel(MAX_ROWS * 4);
        tokio::spawn(run(pool, requests));
        Writer { queue }
    }

    /// Queues `msg` (waiting only for room) and returns its outcome still to come.
    pub(crate) async fn queue(&self, tenant: TenantId, msg: Message) -> StoreResult<PendingAppend> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(AppendRequest { tenant, msg, reply })
            .await
            .map_err(|_| StoreError::Unavailable("the batch writer has stopped".to_owned()))?;
        Ok(PendingAppend::new(async move {
            // A writer that drops the reply without answering has not committed the message either.
            outcome.await.map_err(|_| StoreError::Unavailable("the batch writer stopped mid-batch".to_owned()))?
        }))
    }
}

/// The writer task: takes whatever is queued (at most [`MAX_ROWS`]), writes it, answers, and repeats.
async fn run(pool: SqlitePool, mut requests: mpsc::Receiver<AppendRequest>) {
    while let Some(first) = requests.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_ROWS {
            match requests.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let outcomes = write_batch(&pool, &batch).await;
        for (request, outcome) in batch.into_iter().zip(outcomes) {
            // A caller that gave up waiting no longer needs its answer; the row is stored either way.
            let _ = request.reply.send(outcome);
        }
    }
}

/// Writes `batch` in one transaction and returns one outcome per request, in order.
async fn write_batch(pool: &SqlitePool, batch: &[AppendRequest]) -> Vec<StoreResult<AppendOutcome>> {
    let everyone = |err: StoreError| vec![Err(err); batch.len()];
    let mut tx = match pool.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(err) => return everyone(db_error(err)),
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for request in batch {
        match insert(&mut tx, request.tenant, &request.msg).await {
            Ok(outcome) => outcomes.push(outcome),
            // The transaction may be gone with it: nothing of this batch is reported stored.
            Err(err) => return everyone(err),
        }
    }
    match tx.commit().await {
        // Only now is a `Stored` true.
        Ok(()) => outcomes,
        Err(err) => everyone(db_error(err)),
    }
}

/// Inserts one message: `Ok(outcome)` for the row's own answer (stored, a duplicate key, a taken seq, a
/// missing topic), `Err` for a failure that leaves the transaction in doubt.
async fn insert(
    conn: &mut SqliteConnection,
    tenant_id: TenantId,
    msg: &Message,
) -> StoreResult<StoreResult<AppendOutcome>> {
    let t = tenant(tenant_id);
    let table = Table::of(&msg.topic);
    // The schema's triggers refuse a missing topic and raise the topic's seq and touched time in the same
    // statement. Unique violations are sorted out afterwards, which is the rare path.
    let inserted = sqlx::query(table.insert_sql())
        .bind(t)
        .bind(&msg.topic)
        .bind(msg.seq)
        .bind(user_col(msg.from))
        .bind(msg.client_mid.as_deref())
        .bind(msg.content.to_string())
        .bind(msg.head.as_ref().map(|h| Value::Object(h.clone()).to_string()))
        .bind(msg.audit.as_str())
        .bind(!msg.risk_flags.is_empty())
        .bind(risk_flags_col(&msg.risk_flags))
        .bind(msg.created)
        .execute(&mut *conn)
        .await;
    let err = match inserted {
        Ok(_) => return Ok(Ok(AppendOutcome::Stored)),
        Err(err) => err,
    };
    if let sqlx::Error::Database(db) = &err
        && db.message().contains("palaver: topic not found")
    {
        return Ok(Err(StoreError::NotFound));
    }
    match db_error(err) {
        StoreError::Conflict(detail) => {
            // The idempotency key wins over the seq: a retry that was handed a fresh seq still resolves to the
            // copy already stored.
            if let Some(mid) = &msg.client_mid {
                let existing: Option<i64> = sqlx::query_scalar(table.find_mid_sql())
                    .bind(t)
                    .bind(&msg.topic)
                    .bind(user_col(msg.from))
                    .bind(mid)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(db_error)?;
                if let Some(seq) = existing {
                    return Ok(Ok(AppendOutcome::Duplicate { seq }));
                }
            }
            Ok(Err(StoreError::Conflict(format!("seq {} of {} is already stored: {detail}", msg.seq, msg.topic))))
        }
        other => Err(other),
    }
}
