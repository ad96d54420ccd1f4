//! Messages: judging a message by the publish hooks, storing it under the next seq of its topic with its
//! idempotency key, history pages, deletions, and releasing or rejecting a held message.
//!
//! **Ordering:** a topic's messages take their seq, reach the store and are queued to every attached reader
//! under the topic's one ordering lock (in [`Messages::store`]); nothing slow but the seq allocation and the
//! append runs under it.

use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use palaver_core::ports::{PublishContext, PublishVerdict};
use palaver_core::{
    AccessMode, AppendOutcome, AuditStatus, Claim, DeleteMessages, Message, MessageQuery, Seq, SessionId, StoreError,
    TenantId, UserId,
};
use palaver_proto::Code;

/// How many times a publish re-baselines and retries after finding its seq already stored.
const SEQ_RETRIES: usize = 3;

/// What a publish did: the message's seq, whether it is new (false: a retry answered from storage), and
/// whether it is held for review.
pub(crate) struct Published {
    pub(crate) seq: Seq,
    pub(crate) fresh: bool,
    pub(crate) held: bool,
    pub(crate) msg: Message,
}

/// The message use cases of one tenant.
pub(crate) struct Messages<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Messages<'_> {
    /// Publishes `msg` (from a session that may write to its topic): the hooks judge it, then, unless the
    /// sender was `revoked` meanwhile, it is stored under the next seq. Under the topic's write lock,
    /// `on_stored(seq, held)` queues the sender's ack, then the message goes to every attached reader (except
    /// `skip`) and, with other nodes, onto the bus: both only queue, so the lock is held for microseconds, and
    /// every session here and on other nodes sees the topic's messages in seq order. A held message reaches
    /// nobody but its sender until released.
    pub(crate) async fn publish(
        &self,
        ctx: &PublishContext,
        mut msg: Message,
        skip: Option<SessionId>,
        revoked: impl FnOnce() -> bool,
        on_stored: impl FnOnce(Seq, bool),
    ) -> ServiceResult<Published> {
        let tenant = self.tenant;
        self.judge(ctx, &mut msg).await?;
        let held = msg.audit != AuditStatus::Pass;
        if revoked() {
            return Err(ServiceError::PermissionDenied);
        }
        let (seq, fresh) = self
            .store(msg.clone(), |seq| {
                on_stored(seq, held);
                if !held {
                    // Published under the lock too, so that other nodes see the topic's messages in seq order.
                    let stored = Message { seq, ..msg.clone() };
                    self.svc.deliver_attached(tenant, &stored, skip);
                    let event = crate::delivery::dispatch::Event::Data { msg: (&stored).into() };
                    self.svc.publish_event(tenant, &event, skip, Some(msg.from));
                }
            })
            .await?;
        Ok(Published { seq, fresh, held, msg: Message { seq, ..msg } })
    }

    /// Hooks judge the message before it takes a seq, so a refused message leaves no gap and no row: they may
    /// let it through, refuse it (the client gets the hook's code and reason), rewrite it, or hold it for
    /// review (stored, shown to its sender only, until released).
    async fn judge(&self, ctx: &PublishContext, msg: &mut Message) -> ServiceResult<()> {
        match self.svc.ports.hooks.before_publish(ctx, &msg.content, msg.head.as_ref()).await {
            PublishVerdict::Allow => {}
            PublishVerdict::Reject { code, reason } => {
                return Err(ServiceError::Rejected { code: Code::from_number(code), reason });
            }
            PublishVerdict::Rewrite { content, head } => {
                msg.content = content;
                msg.head = head.filter(|h| !h.is_empty());
            }
            PublishVerdict::Hold { flags } => {
                msg.audit = AuditStatus::Pending;
                msg.risk_flags = flags;
            }
        }
        Ok(())
    }

    /// Stores a message under the next seq, honouring its idempotency key. Returns the seq and whether the
    /// message is new (false: a retry of one already stored).
    /// `on_stored` runs under the topic's write lock once the message is stored under a new seq.
    async fn store(&self, mut msg: Message, on_stored: impl FnOnce(Seq)) -> ServiceResult<(Seq, bool)> {
        let tenant = self.tenant;
        let ports = &self.svc.ports;
        let mid = msg.client_mid.clone();
        if let Some(mid) = mid.as_deref() {
            match ports.idempotency.claim(tenant, &msg.topic, msg.from, mid).await? {
                Claim::Acquired => self.svc.metrics.idempotency("acquired"),
                Claim::Done { seq } => {
                    self.svc.metrics.idempotency("done");
                    self.svc.metrics.message_retry();
                    return Ok((seq, false));
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
        let topic = self.svc.topics.get(tenant, &msg.topic);
        // The one acquisition of the topic's ordering lock in a publish; nothing but the seq, the append and the
        // queueing of the ack and the fanout happens under it.
        let mut state = topic.write.lock().await;
        let result = async {
            let mut floor = match state.floor {
                Some(f) => f,
                None => ports.messages.max_seq(tenant, &msg.topic).await?,
            };
            for _ in 0..SEQ_RETRIES {
                msg.seq = ports.seq.next_seq(tenant, &msg.topic, floor).await?;
                let appending = std::time::Instant::now();
                let appended = ports.messages.append(tenant, &msg).await;
                self.svc.metrics.db_append(appending.elapsed());
                match appended {
                    Ok(AppendOutcome::Stored) => return Ok((msg.seq, true)),
                    Ok(AppendOutcome::Duplicate { seq }) => return Ok((seq, false)),
                    Err(StoreError::Conflict(_)) => {
                        // The seq source fell behind what is stored (a lost counter): move it above the
                        // stored maximum and try again. A seq is never reused and no message overwritten.
                        self.svc.metrics.conditional_failed("message_append");
                        floor = ports.messages.max_seq(tenant, &msg.topic).await?;
                        ports.seq.rebaseline(tenant, &msg.topic, floor).await?;
                        self.svc.metrics.seq_rebaselined();
                        tracing::warn!(topic = %msg.topic, floor, "seq re-baselined after a conflict");
                    }
                    Err(e) => return Err(ServiceError::from(e)),
                }
            }
            Err(ServiceError::Unavailable { reason: "could not allocate a free seq".into(), retry_after_ms: 200 })
        }
        .await;
        match &result {
            Ok((seq, true)) => {
                state.floor = Some(*seq);
                self.svc.metrics.message_stored();
                on_stored(*seq);
            }
            Ok(_) => self.svc.metrics.message_retry(),
            Err(_) => state.floor = None,
        }
        drop(state);
        if let Some(mid) = mid.as_deref() {
            let outcome = match &result {
                Ok((seq, _)) => ports.idempotency.complete(tenant, &msg.topic, msg.from, mid, *seq).await,
                Err(_) => ports.idempotency.fail(tenant, &msg.topic, msg.from, mid).await,
            };
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "idempotency key update failed");
            }
        }
        result
    }

    /// A history page of `stored` as `me` may read it (held messages of others are left out by the store):
    /// the messages of every window, each window at most `limit`; overlapping windows never repeat a message,
    /// and the page is newest first and at most `limit` long.
    pub(crate) async fn page(
        &self,
        stored: &str,
        me: UserId,
        windows: Vec<(Option<Seq>, Option<Seq>)>,
        limit: usize,
    ) -> ServiceResult<Vec<Message>> {
        let mut msgs = Vec::new();
        for (since, before) in windows {
            let query = MessageQuery { since, before, limit };
            msgs.extend(self.svc.ports.messages.list_messages(self.tenant, stored, me, &query).await?);
        }
        msgs.sort_by_key(|m| std::cmp::Reverse(m.seq));
        msgs.dedup_by_key(|m| m.seq);
        msgs.truncate(limit);
        Ok(msgs)
    }

    /// The ranges deleted in `stored` that `me` sees as deleted (everyone's hard deletes and `me`'s soft ones).
    pub(crate) async fn deletions(&self, stored: &str, me: UserId) -> ServiceResult<palaver_core::Deletions> {
        Ok(self.svc.ports.messages.list_deletions(self.tenant, stored, me).await?)
    }

    /// Deletes ranges of `stored` for `me` (a reader, R) or, with `hard` and D, for everyone; without D a hard
    /// delete quietly becomes a soft one, as in Tinode. The other sessions concerned (all but `skip`) are told.
    /// Returns the deletion's id.
    pub(crate) async fn delete(
        &self,
        me: UserId,
        stored: &str,
        domain: Vec<palaver_core::SeqRange>,
        hard: bool,
        delseq: &[palaver_proto::SeqRange],
        skip: SessionId,
    ) -> ServiceResult<i64> {
        let tenant = self.tenant;
        let sub = self.svc.ports.subs.get_sub(tenant, stored, me).await?.ok_or(ServiceError::PermissionDenied)?;
        if !sub.mode().has(AccessMode::READ) {
            return Err(ServiceError::PermissionDenied);
        }
        // A deleter deletes for everyone; anyone else only recalls their own recent messages, and otherwise
        // deletes for themselves, as Tinode turns a hard delete without D into a soft one.
        let deleter = sub.mode().has(AccessMode::DELETE);
        let recall = hard && !deleter && self.svc.edits(tenant).may_recall(me, stored, &domain).await?;
        let hard = hard && (deleter || recall);
        let recalled_by = recall.then_some(me);
        let request = DeleteMessages { ranges: domain, hard, for_user: me, when: now_millis(), recalled_by };
        let del_id = self.svc.ports.messages.delete_messages(tenant, stored, &request).await?;
        if hard {
            self.svc.files(tenant).forget(stored, Some(&request.ranges)).await;
        }
        let event = crate::delivery::dispatch::Event::Deleted {
            topic: stored.to_owned(),
            by: me,
            hard,
            clear: del_id,
            delseq: delseq.to_vec(),
        };
        self.svc.dispatch(tenant, event, Some(skip), Some(me)).await;
        Ok(del_id)
    }

    /// Releases (`Pass`) or rejects (`Reject`) a message held for review; see [`crate::Service::set_message_audit`].
    pub(crate) async fn review(&self, topic: &str, seq: Seq, audit: AuditStatus) -> ServiceResult<()> {
        let tenant = self.tenant;
        if audit == AuditStatus::Pending {
            return Err(ServiceError::Malformed("a message is held by a publish hook, not by review".into()));
        }
        self.svc.ports.topics.get_topic(tenant, topic).await?.ok_or(ServiceError::TopicNotFound)?;
        let Some(next) = seq.checked_add(1).filter(|_| seq > 0) else { return Err(ServiceError::NotFound) };
        // Under the topic's write lock, so that two reviews of one message on this node cannot both deliver it.
        let loaded = self.svc.topics.get(tenant, topic);
        // The decision's audit event commits with it, in the store's transaction, naming the author the store
        // read; it is owed only while the tenant's outbox has room for one more record (`admitted`, counted once
        // the message is known to be held).
        let action = if audit == AuditStatus::Pass { "message.release" } else { "message.reject" };
        let owed = move |admitted: bool, msg: &Message| {
            if !admitted {
                return Vec::new();
            }
            let target = ("message", format!("{topic}:{seq}"));
            let event = crate::backbone::audit_event(tenant, action, ("admin", None), target)
                .with_topic(topic, Some(seq))
                .with_detail(serde_json::json!({ "author": msg.from.to_string() }));
            vec![crate::backbone::audit_record(&event)]
        };
        let msg = {
            let _write = loaded.write.lock().await;
            // A reader other than the sender sees only passed messages; no user has id 0, so this finds the
            // message exactly when it is no longer held.
            let window = MessageQuery { since: Some(seq), before: Some(next), limit: 1 };
            let passed = self.svc.ports.messages.list_messages(tenant, topic, UserId(0), &window).await?;
            if passed.iter().any(|m| m.seq == seq) {
                return Err(ServiceError::NotAllowed);
            }
            let admitted = self.svc.owes(tenant, 1);
            let owed = |msg: &Message| owed(admitted, msg);
            let msg = self.svc.ports.messages.set_audit(tenant, topic, seq, audit, &owed).await?;
            self.svc.owed_written();
            msg
        };
        if audit == AuditStatus::Pass {
            self.svc.fan_out(tenant, &msg, None).await;
            // Held, it pushed nobody; released, it pushes as if just published (only a buffer is written). A call
            // message is the exception: a held call never rang, so its release must not ring a phone.
            let is_call = msg.head.as_ref().is_some_and(|h| h.contains_key("webrtc"));
            if !is_call {
                self.svc.enqueue_push(tenant, &msg, None);
            }
        }
        Ok(())
    }
}
