//! Messages: judging a message by the publish hooks, storing it under the next seq of its topic with its
//! idempotency key, history pages, deletions, and releasing or rejecting a held message.
//!
//! **Ordering:** a topic's messages take their seq and are queued on the store under the topic's one ordering
//! lock, then settle (acknowledged, queued to every attached reader) in seq order; see the pipeline module.

use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use palaver_core::ports::{PublishContext, PublishVerdict};
use palaver_core::{AccessMode, AuditStatus, DeleteMessages, Message, MessageQuery, Seq, SessionId, TenantId, UserId};
use palaver_proto::Code;

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
    /// Publishes `msg` (from a session that may write to its topic) and waits until it is settled: the two
    /// halves of the publish pipeline ([`Messages::admit`], [`Messages::settle`]) back to back.
    pub(crate) async fn publish(
        &self,
        ctx: &PublishContext,
        msg: Message,
        skip: Option<SessionId>,
        revoked: impl FnOnce() -> bool,
        on_stored: impl FnOnce(Seq, bool),
    ) -> ServiceResult<Published> {
        let admitted = self.admit(ctx, msg, revoked).await?;
        self.settle(admitted, skip, on_stored).await
    }

    /// Hooks judge the message before it takes a seq, so a refused message leaves no gap and no row: they may
    /// let it through, refuse it (the client gets the hook's code and reason), rewrite it, or hold it for
    /// review (stored, shown to its sender only, until released).
    pub(super) async fn judge(&self, ctx: &PublishContext, msg: &mut Message) -> ServiceResult<()> {
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
        let event = crate::delivery::event::Event::Deleted {
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
            self.svc.enqueue_published(tenant, &msg);
        }
        Ok(())
    }
}
