//! The publish pipeline: a message takes its seq and is queued on the store under the topic's ordering lock,
//! then commits, is acknowledged and fans out in its turn, after every earlier seq of the topic.
//!
//! **Why two halves.** A store that commits in batches (MariaDB's batch writer) answers an append only after
//! a durable commit. Waiting for it under the ordering lock made one hot topic as slow as one commit per
//! message. So the lock covers only "claim the idempotency keys, allocate seqs, queue the rows, take turns" (a
//! few Redis calls per batch, the store's maximum on a topic's first use, and channel sends), and the commit is
//! awaited outside it, where many rows of one topic share it.
//!
//! **Why admissions.** A publisher does not wait for its seq either: [`Messages::admit`] puts the message on
//! its topic's admissions in arrival order and returns, so the session reads its next frame while the seq is
//! allocated. One drain per topic takes everything waiting at once and allocates the whole run of seqs in one
//! allocator call, so a hot topic pays one Redis round trip per batch instead of one per message. The drain
//! runs in the admitting call as far as it can; only when it has to wait (Redis, the store, a busy lock) does
//! it go on in a task of its own. On the embedded default (in-process allocator and keys) it does not wait, and
//! no task is made.
//!
//! **Ordering guarantees**, each stated where it holds:
//! - a topic's messages are admitted in the order their publishers' frames were read ([`Messages::admit`]),
//!   and seqs are allocated and rows queued in admission order, under the lock ([`Drain::run`]);
//! - a message is acknowledged and fanned out only after its own commit and after every earlier message of
//!   the topic has settled (stored and fanned out, or failed): the turns form a chain ([`Messages::settle`]).
//!   So no later seq is acknowledged before an earlier one is stored, and no message is acknowledged unless
//!   the store committed it. A failed earlier message leaves a gap, as a deleted one does.
//!
//! Lock order: the topic's ordering lock, then its admissions lock (never held across an await); a turn is
//! awaited with no lock held.

use super::messages::{Messages, Published};
use crate::delivery::topics::{Admission, LoadedTopic, Placed, Refused, Turn, WriteState};
use crate::error::{ServiceError, ServiceResult};
use crate::metrics::Metrics;
use futures_util::FutureExt;
use palaver_core::ports::{IdempotencyStore, MessageStore, PendingAppend, PublishContext, SeqAllocator};
use palaver_core::{AppendOutcome, AuditStatus, Claim, Message, Seq, SessionId, StoreError, TenantId, UserId};
use std::sync::Arc;
use tokio::sync::oneshot;

/// How many times a publish re-baselines and queues again after finding its seq already stored.
const SEQ_RETRIES: usize = 3;

/// A message that passed the hooks, admitted to its topic: the receiver tells what became of it (queued under
/// its seq, already stored by an earlier attempt with its `client_mid`, or refused).
pub(crate) struct Admitted {
    msg: Message,
    slot: oneshot::Receiver<Result<Placed, Refused>>,
    topic: Arc<LoadedTopic>,
}

/// A message queued under its seq, with its place in the topic's chain of turns.
struct Queued {
    msg: Message,
    pending: PendingAppend,
    turn: Turn,
    topic: Arc<LoadedTopic>,
}

/// What a topic's drain uses; owned, so that the drain can outlive the call that started it.
struct Drain {
    seq: Arc<dyn SeqAllocator>,
    idempotency: Arc<dyn IdempotencyStore>,
    messages: Arc<dyn MessageStore>,
    metrics: Arc<Metrics>,
    tenant: TenantId,
    topic: Arc<LoadedTopic>,
}

/// Ends a drain that did not finish (it panicked, or its task was dropped): such a drain must not leave the
/// topic marked as drained, or nothing admitted later would ever be queued. What it had not taken is answered
/// by the dropped reply senders: those publishers see `Unavailable`. A drain that finished unmarked the topic
/// itself, under the admissions lock, and a new drain may be running by now: then this does nothing.
struct Unfinished {
    topic: Arc<LoadedTopic>,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished {
            let mut admissions = self.topic.admissions.lock();
            admissions.draining = false;
            admissions.waiting.clear();
        }
    }
}

/// The most messages one batch takes: one claims pipeline and one run of seqs stay short under the ordering lock
/// even after a reconnect storm left many waiting.
const MAX_BATCH: usize = 256;

/// Batches a drain queues before it lets the task it runs in yield: a drain running inside a session's admit
/// then goes on in a task of its own instead of keeping that session from reading while others publish.
const BATCHES_BEFORE_YIELD: usize = 4;

impl Messages<'_> {
    /// The first half of a publish: the hooks judge `msg`; unless the sender was `revoked` meanwhile, it is
    /// admitted to its topic, where the drain claims its idempotency key and queues it under the next seq.
    /// Returns once it is admitted, usually before either.
    pub(crate) async fn admit(
        &self,
        ctx: &PublishContext,
        mut msg: Message,
        revoked: impl FnOnce() -> bool,
    ) -> ServiceResult<Admitted> {
        self.judge(ctx, &mut msg).await?;
        if revoked() {
            return Err(ServiceError::PermissionDenied);
        }
        let topic = self.svc.topics.get(self.tenant, &msg.topic);
        let (reply, slot) = oneshot::channel();
        let start = {
            let mut admissions = topic.admissions.lock();
            // Admission order is the seq order: this push is the point where it is fixed.
            admissions.waiting.push(Admission { msg: msg.clone(), reply });
            !std::mem::replace(&mut admissions.draining, true)
        };
        if start {
            let ports = &self.svc.ports;
            let drain = Drain {
                seq: ports.seq.clone(),
                idempotency: ports.idempotency.clone(),
                messages: ports.messages.clone(),
                metrics: self.svc.metrics.clone(),
                tenant: self.tenant,
                topic: topic.clone(),
            };
            let mut draining = Box::pin(drain.run());
            if (&mut draining).now_or_never().is_none() {
                tokio::spawn(draining);
            }
        }
        Ok(Admitted { msg, slot, topic })
    }

    /// Queues `msg` again after a conflict, re-baselining the allocator to `floor` first: the message takes a
    /// new seq and a new turn, after everything queued meanwhile. It skips the admissions, whose drain would
    /// not re-baseline; the ordering lock still puts it in one order with them.
    async fn requeue(&self, topic: Arc<LoadedTopic>, mut msg: Message, found: Seq) -> ServiceResult<Queued> {
        let (tenant, ports) = (self.tenant, &self.svc.ports);
        let mut state = topic.write.lock().await;
        let queued = async {
            // The seq source fell behind what is stored (a lost counter): raise it above both the stored
            // maximum and what this node queued. A seq is never reused, no message overwritten.
            let floor = found.max(state.floor.unwrap_or(0));
            ports.seq.rebaseline(tenant, &msg.topic, floor).await?;
            self.svc.metrics.seq_rebaselined();
            tracing::warn!(topic = %msg.topic, floor, "seq re-baselined after a conflict");
            msg.seq = ports.seq.next_seq(tenant, &msg.topic, floor).await?;
            ports.messages.queue_append(tenant, &msg).await.map_err(ServiceError::from)
        }
        .await;
        let pending = match queued {
            Ok(pending) => pending,
            Err(e) => {
                state.floor = None;
                return Err(e);
            }
        };
        state.floor = Some(msg.seq);
        let turn = Turn::next(&mut state);
        drop(state);
        Ok(Queued { msg, pending, turn, topic })
    }

    /// The second half: waits for the commit, then for the topic's turn, and then, if the message is stored,
    /// runs `on_stored(seq, held)` (the sender's ack) and queues it to every attached reader (except `skip`)
    /// and onto the bus, all before the next message of the topic may. A held message reaches nobody but its
    /// sender until released. The idempotency key is completed (or released) last.
    pub(crate) async fn settle(
        &self,
        admitted: Admitted,
        skip: Option<SessionId>,
        on_stored: impl FnOnce(Seq, bool),
    ) -> ServiceResult<Published> {
        let tenant = self.tenant;
        let Admitted { msg, slot, topic } = admitted;
        let mut queued = match slot.await {
            Ok(Ok(Placed::Queued { msg, pending, turn })) => Queued { msg, pending, turn, topic },
            Ok(Ok(Placed::Stored { seq })) => {
                let held = msg.audit != AuditStatus::Pass;
                return Ok(Published { seq, fresh: false, held, msg: Message { seq, ..msg } });
            }
            Ok(Err(Refused { error, claimed })) => {
                if claimed {
                    self.release_key(&msg, None).await;
                }
                return Err(error);
            }
            Err(_) => {
                // The drain went away without answering (it panicked). Whether it had claimed the key is not
                // known, so the key is left to its pending TTL rather than released under another attempt.
                return Err(ServiceError::Unavailable {
                    reason: "the topic's writer stopped; send again".into(),
                    retry_after_ms: 200,
                });
            }
        };
        let mut attempts = 1;
        let result = loop {
            let committing = std::time::Instant::now();
            let outcome = (&mut queued.pending).await;
            self.svc.metrics.db_append(committing.elapsed());
            queued.turn.wait().await;
            let msg = &queued.msg;
            match outcome {
                Ok(AppendOutcome::Stored) => {
                    self.svc.metrics.message_stored();
                    let held = msg.audit != AuditStatus::Pass;
                    on_stored(msg.seq, held);
                    if !held {
                        self.svc.deliver_attached(tenant, msg, skip);
                        let event = crate::delivery::event::Event::Data { msg: msg.into() };
                        self.svc.publish_event(tenant, &event, skip, Some(msg.from));
                    }
                    break Ok((msg.seq, true));
                }
                Ok(AppendOutcome::Duplicate { seq }) => {
                    self.svc.metrics.message_retry();
                    break Ok((seq, false));
                }
                Err(StoreError::Conflict(_)) if attempts < SEQ_RETRIES => {
                    self.svc.metrics.conditional_failed("message_append");
                    attempts += 1;
                    let found = match self.svc.ports.messages.max_seq(tenant, &msg.topic).await {
                        Ok(found) => found,
                        Err(e) => break Err(ServiceError::from(e)),
                    };
                    // The next attempt takes a new turn, after those queued meanwhile: its turn ends here.
                    let topic = queued.topic.clone();
                    match self.requeue(topic, queued.msg.clone(), found).await {
                        Ok(again) => queued = again,
                        Err(e) => break Err(e),
                    }
                }
                Err(StoreError::Conflict(_)) => {
                    break Err(ServiceError::Unavailable {
                        reason: "could not allocate a free seq".into(),
                        retry_after_ms: 200,
                    });
                }
                Err(e) => {
                    // The floor may have counted this seq as queued; the next publish reads the store's maximum.
                    queued.topic.write.lock().await.floor = None;
                    break Err(ServiceError::from(e));
                }
            }
        };
        // The next message of the topic may settle now.
        let Queued { msg, turn, .. } = queued;
        drop(turn);
        let seq = result.as_ref().map(|(seq, _)| *seq).ok();
        self.release_key(&msg, seq).await;
        let (seq, fresh) = result?;
        let held = msg.audit != AuditStatus::Pass;
        Ok(Published { seq, fresh, held, msg: Message { seq, ..msg } })
    }

    /// Completes the idempotency key of `msg` with the seq it was stored under, or releases it after a failure.
    async fn release_key(&self, msg: &Message, stored: Option<Seq>) {
        let Some(mid) = msg.client_mid.as_deref() else { return };
        let ports = &self.svc.ports;
        let outcome = match stored {
            Some(seq) => ports.idempotency.complete(self.tenant, &msg.topic, msg.from, mid, seq).await,
            None => ports.idempotency.fail(self.tenant, &msg.topic, msg.from, mid).await,
        };
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "idempotency key update failed");
        }
    }
}

impl Drain {
    /// Queues everything admitted to the topic, batch by batch, until nothing waits; then marks the topic as
    /// drained, under the same lock as the admissions, so that a message admitted after that starts a drain.
    async fn run(self) {
        let mut guard = Unfinished { topic: self.topic.clone(), finished: false };
        for batches in 1.. {
            let batch = {
                let mut admissions = self.topic.admissions.lock();
                if admissions.waiting.is_empty() {
                    admissions.draining = false;
                    guard.finished = true;
                    return;
                }
                let n = admissions.waiting.len().min(MAX_BATCH);
                admissions.waiting.drain(..n).collect::<Vec<_>>()
            };
            let mut state = self.topic.write.lock().await;
            self.queue(&mut state, batch).await;
            drop(state);
            if batches % BATCHES_BEFORE_YIELD == 0 {
                tokio::task::yield_now().await;
            }
        }
    }

    /// Claims the idempotency keys of `batch` in one call, then allocates one run of seqs for the messages
    /// still to store and queues them under it, in admission order, each taking the topic's next turn; each
    /// publisher gets its own outcome. Runs under the ordering lock.
    async fn queue(&self, state: &mut WriteState, batch: Vec<Admission>) {
        // A publisher that went away before its message took a seq: the message is not stored, as if it had
        // never been sent.
        let batch: Vec<Admission> = batch.into_iter().filter(|a| !a.reply.is_closed()).collect();
        let Some(first) = batch.first() else { return };
        let name = first.msg.topic.clone();
        let store = self.claim(&name, batch).await;
        let Some(count) = u32::try_from(store.len()).ok().filter(|n| *n > 0) else { return };
        let floor = match state.floor {
            Some(known) => Ok(known),
            None => self.messages.max_seq(self.tenant, &name).await,
        };
        let start = match floor {
            Ok(floor) => self.seq.next_seqs(self.tenant, &name, floor, count).await,
            Err(e) => Err(e),
        };
        let start = match start {
            Ok(start) => start,
            Err(e) => {
                state.floor = None;
                let error = ServiceError::from(e);
                for (a, claimed) in store {
                    let _ = a.reply.send(Err(Refused { error: error.clone(), claimed }));
                }
                return;
            }
        };
        self.metrics.seq_run(store.len());
        let mut failed = false;
        for (seq, (a, claimed)) in (start..).zip(store) {
            let msg = Message { seq, ..a.msg };
            // Queued in seq order: the store writes a caller's queued appends in the order they were queued.
            match self.messages.queue_append(self.tenant, &msg).await {
                Ok(pending) => {
                    // The highest seq queued, not necessarily stored yet: the next allocation only has to
                    // exceed it.
                    state.floor = Some(seq);
                    let turn = Turn::next(state);
                    let _ = a.reply.send(Ok(Placed::Queued { msg, pending, turn }));
                }
                Err(e) => {
                    failed = true;
                    let _ = a.reply.send(Err(Refused { error: ServiceError::from(e), claimed }));
                }
            }
        }
        if failed {
            // A failed queue may have counted its seq as queued; the next batch reads the store's maximum.
            state.floor = None;
        }
    }

    /// Claims the batch's idempotency keys in one call and answers the messages that are not to be stored: a
    /// retry of a stored message gets its seq, one whose key another attempt holds or whose claim failed is
    /// refused (a key's failure refuses its own message only). Returns the messages to store, each with whether
    /// it holds its key.
    async fn claim(&self, topic: &str, batch: Vec<Admission>) -> Vec<(Admission, bool)> {
        let keys: Vec<(UserId, &str)> =
            batch.iter().filter_map(|a| a.msg.client_mid.as_deref().map(|mid| (a.msg.from, mid))).collect();
        if keys.is_empty() {
            return batch.into_iter().map(|a| (a, false)).collect();
        }
        let mut answers = self.idempotency.claim_many(self.tenant, topic, &keys).await.into_iter();
        let mut store = Vec::with_capacity(batch.len());
        for a in batch {
            if a.msg.client_mid.is_none() {
                store.push((a, false));
                continue;
            }
            let answer = answers.next().unwrap_or_else(|| Err(StoreError::Internal("too few claims".into())));
            let refused = |error| Err(Refused { error, claimed: false });
            let reply = match answer {
                Ok(Claim::Acquired) => {
                    self.metrics.idempotency("acquired");
                    store.push((a, true));
                    continue;
                }
                Ok(Claim::Done { seq }) => {
                    self.metrics.idempotency("done");
                    self.metrics.message_retry();
                    Ok(Placed::Stored { seq })
                }
                Ok(Claim::Pending) => {
                    self.metrics.idempotency("pending");
                    refused(ServiceError::Unavailable {
                        reason: "a message with this client_mid is being stored".into(),
                        retry_after_ms: 500,
                    })
                }
                Err(e) => refused(ServiceError::from(e)),
            };
            let _ = a.reply.send(reply);
        }
        store
    }
}
