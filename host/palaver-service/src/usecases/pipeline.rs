//! The publish pipeline: a message takes its seq and is queued on the store under the topic's ordering lock,
//! then commits, is acknowledged and fans out in its turn, after every earlier seq of the topic.
//!
//! **Why two halves.** A store that commits in batches (MariaDB's batch writer) answers an append only after
//! a durable commit. Waiting for it under the ordering lock made one hot topic as slow as one commit per
//! message. So the lock covers only "allocate seq, queue the row, take a turn" (a Redis call and a channel
//! send at most), and the commit is awaited outside it, where many rows of one topic share it.
//!
//! **Ordering guarantees**, each stated where it holds:
//! - seqs are allocated and rows queued in one order per topic, under the lock ([`Messages::queue`]);
//! - a message is acknowledged and fanned out only after its own commit and after every earlier message of
//!   the topic has settled (stored and fanned out, or failed): the turns form a chain ([`Messages::settle`]).
//!   So no later seq is acknowledged before an earlier one is stored, and no message is acknowledged unless
//!   the store committed it. A failed earlier message leaves a gap, as a deleted one does.
//!
//! Lock order: the topic's ordering lock only; a turn is awaited with no lock held.

use super::messages::{Messages, Published};
use crate::delivery::topics::LoadedTopic;
use crate::error::{ServiceError, ServiceResult};
use palaver_core::ports::{PendingAppend, PublishContext};
use palaver_core::{AppendOutcome, AuditStatus, Claim, Message, Seq, SessionId, StoreError};
use std::sync::Arc;
use tokio::sync::oneshot;

/// How many times a publish re-baselines and queues again after finding its seq already stored.
const SEQ_RETRIES: usize = 3;

/// A message that passed the hooks, either already stored (a retry of an idempotency key that completed) or
/// queued on the store under its seq.
pub(crate) enum Admitted {
    Retry { seq: Seq, msg: Message },
    Queued(Queued),
}

/// A message queued under its seq, with its place in the topic's chain of turns.
pub(crate) struct Queued {
    msg: Message,
    pending: PendingAppend,
    turn: Turn,
    topic: Arc<LoadedTopic>,
}

/// A place in a topic's chain: `before` resolves once the previous message settled; dropping the turn (and with
/// it `_done`, which is never sent on) lets the next one go, whether this one was stored or failed, and also if
/// its publisher went away.
pub(crate) struct Turn {
    before: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl Turn {
    async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            // An error means the previous holder dropped its turn: it has settled as far as this one cares.
            let _ = before.await;
        }
    }
}

impl Messages<'_> {
    /// The first half of a publish: the hooks judge `msg`; unless the sender was `revoked` meanwhile, its
    /// idempotency key is claimed and it is queued under the next seq. Returns once it is queued.
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
        if let Some(mid) = msg.client_mid.as_deref() {
            let ports = &self.svc.ports;
            match ports.idempotency.claim(self.tenant, &msg.topic, msg.from, mid).await? {
                Claim::Acquired => self.svc.metrics.idempotency("acquired"),
                Claim::Done { seq } => {
                    self.svc.metrics.idempotency("done");
                    self.svc.metrics.message_retry();
                    return Ok(Admitted::Retry { seq, msg: Message { seq, ..msg } });
                }
                Claim::Pending => {
                    self.svc.metrics.idempotency("pending");
                    return Err(ServiceError::Unavailable {
                        reason: "a message with this client_mid is being stored".into(),
                        retry_after_ms: 500,
                    });
                }
            }
        }
        let topic = self.svc.topics.get(self.tenant, &msg.topic);
        match self.queue(topic, msg.clone(), None).await {
            Ok(queued) => Ok(Admitted::Queued(queued)),
            Err(e) => {
                self.release_key(&msg, None).await;
                Err(e)
            }
        }
    }

    /// Allocates the next seq and queues `msg` under it, taking the topic's next turn: the one acquisition of
    /// the ordering lock per attempt. Nothing but the seq allocation and the hand-over to the store's queue
    /// happens under it. `floor` re-baselines the allocator first (after a conflict).
    async fn queue(&self, topic: Arc<LoadedTopic>, mut msg: Message, floor: Option<Seq>) -> ServiceResult<Queued> {
        let (tenant, ports) = (self.tenant, &self.svc.ports);
        let mut state = topic.write.lock().await;
        let queued = async {
            let floor = match (floor, state.floor) {
                (Some(found), known) => {
                    // The seq source fell behind what is stored (a lost counter): raise it above both the
                    // stored maximum and what this node queued. A seq is never reused, no message overwritten.
                    let floor = found.max(known.unwrap_or(0));
                    ports.seq.rebaseline(tenant, &msg.topic, floor).await?;
                    self.svc.metrics.seq_rebaselined();
                    tracing::warn!(topic = %msg.topic, floor, "seq re-baselined after a conflict");
                    floor
                }
                (None, Some(known)) => known,
                (None, None) => ports.messages.max_seq(tenant, &msg.topic).await?,
            };
            msg.seq = ports.seq.next_seq(tenant, &msg.topic, floor).await?;
            // Queued in seq order: the store writes a caller's queued appends in the order they were queued.
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
        // The highest seq queued, not necessarily stored yet: the next allocation only has to exceed it.
        state.floor = Some(msg.seq);
        let (done, next) = oneshot::channel();
        let before = state.tail.replace(next);
        drop(state);
        Ok(Queued { msg, pending, turn: Turn { before, _done: done }, topic })
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
        let mut queued = match admitted {
            Admitted::Retry { seq, msg } => {
                let held = msg.audit != AuditStatus::Pass;
                return Ok(Published { seq, fresh: false, held, msg });
            }
            Admitted::Queued(q) => q,
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
                    match self.queue(topic, queued.msg.clone(), Some(found)).await {
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
