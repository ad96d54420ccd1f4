//! The writer behind queued appends' Redis side: one task per decorator stack takes stored messages in the
//! order their appends settled and applies them in batches, each one pipeline of append scripts, so a busy node
//! pays one Redis round trip per batch instead of one per message.
//!
//! What it writes is an optimisation and a cache patch (hot copies, the cached topic's `seq` and `touched`), so
//! nothing waits for it: beyond [`QUEUE`] waiting messages a patch is dropped and counted as a failed write.
//! Until a topic's waiting messages are written, this node reads that topic's history from the inner store and
//! raises its cached `seq` to them ([`Coherence::copies_waiting`]). A failed or dropped write is counted per
//! message: history reads then fall back to the inner store (the hot copy is missing), and the cached topic's
//! `seq` may stay behind until its TTL, as after any failed patch.

use crate::coherence::Coherence;
use crate::policy::HotPolicy;
use futures_util::future::join_all;
use palaver_core::{Message, TenantId};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Stored messages waiting for their copy before a settling append has to wait for room.
const QUEUE: usize = 8192;

/// The most messages one pipeline carries: enough to make a busy node's round trips rare, small enough that
/// one batch's scripts do not hold Redis for long.
const BATCH: usize = 128;

/// At most one warning this often while batches keep failing (Redis down fails every batch at once).
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The queue and, once the first message arrives, the task that empties it.
pub(crate) struct CopyWriter {
    redis: Coherence,
    policy: HotPolicy,
    tx: OnceLock<mpsc::Sender<(TenantId, Message)>>,
}

impl CopyWriter {
    pub(crate) fn new(redis: Coherence, policy: HotPolicy) -> Self {
        Self { redis, policy, tx: OnceLock::new() }
    }

    /// Queues the Redis side of a stored message, without waiting. Called from a settling append, so inside a
    /// runtime; the task starts with the first call and ends when the last handle on the stack is dropped. A
    /// full queue drops the patch (counted as a failed write, like a failed batch) rather than hold up acks.
    pub(crate) fn stored(&self, tenant: TenantId, msg: Message) {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(run(self.redis.clone(), self.policy.clone(), rx));
            tx
        });
        self.redis.copy_queued(tenant, &msg);
        if let Err(e) = tx.try_send((tenant, msg)) {
            let (mpsc::error::TrySendError::Full((tenant, msg)) | mpsc::error::TrySendError::Closed((tenant, msg))) = e;
            self.redis.copies_done([(tenant, msg.topic.as_str())]);
            self.redis.client.metrics().hot_write_failed();
        }
    }
}

async fn run(redis: Coherence, policy: HotPolicy, mut rx: mpsc::Receiver<(TenantId, Message)>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut hot = Vec::with_capacity(BATCH);
    let (mut warned, mut suppressed): (Option<Instant>, u64) = (None, 0);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        hot.clear();
        // Side by side: a policy that counts members may read the database on a miss, and one slow count must
        // not hold up the batch behind it.
        hot.extend(join_all(batch.iter().map(|(tenant, msg)| policy.is_hot(*tenant, &msg.topic))).await);
        let stored = batch.iter().zip(&hot).map(|((tenant, msg), hot)| (*tenant, msg, *hot));
        if let Err(e) = redis.on_appends(stored).await {
            let copies = hot.iter().filter(|h| **h).count();
            if warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
                suppressed += 1;
            } else {
                tracing::warn!(
                    error = %e,
                    messages = batch.len(),
                    suppressed,
                    "redis append of a batch of stored messages failed; copies may be stale until TTL"
                );
                (warned, suppressed) = (Some(Instant::now()), 0);
            }
            let metrics = redis.client.metrics();
            for _ in 0..copies {
                metrics.hot_write_failed();
            }
            for _ in copies..batch.len() {
                metrics.invalidation_failed();
            }
        }
        redis.copies_done(batch.iter().map(|(tenant, msg)| (*tenant, msg.topic.as_str())));
        batch.clear();
    }
}
