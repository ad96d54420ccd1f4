//! `{pub}` and `{note}`: storing a message under the next seq and fanning it out, and relaying typing, read
//! and receive notes.
//!
//! The publish path: check attachment and W; claim the idempotency key if the client sent `client_mid`; under
//! the topic's write lock allocate the seq and store the message; mark the key done; reply ctrl 202; then fan
//! out. Nothing reaches another session before the store has acknowledged the message.

use crate::error::{ServiceError, ServiceResult};
use crate::session::Session;
use crate::topics::{Resolved, resolve};
use crate::{now_millis, render};
use palaver_core::ports::{PublishContext, PublishVerdict};
use palaver_core::{AccessMode, AppendOutcome, AuditStatus, Claim, Message, Seq, StoreError, TopicKind, UserId};
use palaver_proto::{Code, MsgNote, MsgPub};
use serde_json::json;

/// How many times a publish re-baselines and retries after finding its seq already stored.
const SEQ_RETRIES: usize = 3;

impl Session {
    /// The stored name of an attached topic, with this session's effective mode there.
    fn attached_topic(&self, wire: &str, me: UserId) -> ServiceResult<(String, AccessMode)> {
        let stored = match resolve(wire, me).ok_or(ServiceError::TopicNotFound)? {
            Resolved::Group(n) => n,
            Resolved::P2p { stored, .. } => stored,
            Resolved::Me | Resolved::Fnd => return Err(ServiceError::PermissionDenied),
            Resolved::NewGroup { .. } => return Err(ServiceError::TopicNotFound),
        };
        let mode =
            self.svc.hub.attached_mode(self.tenant(), &stored, self.handle.sid).ok_or(ServiceError::MustAttach)?;
        Ok((stored, mode))
    }

    pub(crate) async fn on_pub(&mut self, m: MsgPub) -> ServiceResult<()> {
        let me = self.me()?;
        let (stored, mode) = self.attached_topic(&m.topic, me)?;
        if !mode.has(AccessMode::WRITE) {
            return Err(ServiceError::PermissionDenied);
        }
        // Mutes and blocks hold on every node: the gate state is dropped everywhere by each change.
        self.svc.check_gate(self.tenant(), &stored, me).await?;
        let content = m
            .content
            .filter(|c| !c.is_null())
            .ok_or_else(|| ServiceError::Malformed("pub.content is required".into()))?;
        if let Some(mid) = m.client_mid.as_deref()
            && (mid.is_empty() || mid.len() > self.svc.cfg.max_client_mid)
        {
            return Err(ServiceError::Malformed(format!("client_mid must be 1–{} bytes", self.svc.cfg.max_client_mid)));
        }
        let mut head = m.head;
        if let Some(h) = head.as_mut() {
            // The sender is set by the server; a client-supplied one is a spoofing attempt.
            h.remove("sender");
        }
        let head = head.filter(|h| !h.is_empty());
        let mut msg = Message {
            topic: stored.clone(),
            seq: 0,
            created: now_millis(),
            from: me,
            head,
            content,
            client_mid: m.client_mid.clone(),
            audit: AuditStatus::Pass,
            risk_flags: Vec::new(),
        };
        // Hooks judge the message before it takes a seq, so a refused message leaves no gap and no row.
        let ctx = PublishContext {
            tenant: self.tenant(),
            topic: stored.clone(),
            kind: if stored.starts_with("p2p") { TopicKind::P2p } else { TopicKind::Group },
            from: me,
            session: self.sid(),
            node: self.svc.cfg.node_id.clone(),
        };
        match self.svc.ports.hooks.before_publish(&ctx, &msg.content, msg.head.as_ref()).await {
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
        let held = msg.audit != AuditStatus::Pass;
        let tenant = self.tenant();
        let skip = m.noecho.then_some(self.handle.sid);
        let ack = |seq: Seq| {
            let params = if held { json!({ "seq": seq, "audit": "pending" }) } else { json!({ "seq": seq }) };
            render::ctrl_frame(m.id.as_deref(), Some(&m.topic), Code::Accepted, now_millis(), Some(params))
        };
        // Under the topic's write lock: the ack, then the delivery to attached readers. Both only queue, so
        // the lock is held for microseconds, and every session sees the topic's messages in seq order.
        let mut acked = false;
        let (seq, fresh) = self
            .store_message(msg.clone(), |seq| {
                if m.id.is_some() {
                    acked = self.handle.push(ack(seq));
                }
                if !held {
                    // Published under the lock too, so that other nodes see the topic's messages in seq order.
                    let stored = Message { seq, ..msg.clone() };
                    self.svc.deliver_attached(tenant, &stored, skip);
                    let event = crate::realtime::Event::Data { msg: (&stored).into() };
                    self.svc.publish_event(tenant, &event, skip, Some(me));
                }
            })
            .await?;
        if m.id.is_some() && !acked {
            // A retry answered from storage, or our own queue was full: reply the waiting way.
            self.send(ack(seq)).await;
        }
        if fresh && !held {
            self.svc.notify_unattached(tenant, &Message { seq, ..msg }).await;
        }
        Ok(())
    }

    /// Stores a message under the next seq, honouring its idempotency key. Returns the seq and whether the
    /// message is new (false: a retry of one already stored).
    /// `on_stored` runs under the topic's write lock once the message is stored under a new seq.
    async fn store_message(&self, mut msg: Message, on_stored: impl FnOnce(Seq)) -> ServiceResult<(Seq, bool)> {
        let tenant = self.tenant();
        let ports = &self.svc.ports;
        let mid = msg.client_mid.clone();
        if let Some(mid) = mid.as_deref() {
            match ports.idempotency.claim(tenant, &msg.topic, msg.from, mid).await? {
                Claim::Acquired => {}
                Claim::Done { seq } => {
                    self.svc.metrics.message_retry();
                    return Ok((seq, false));
                }
                Claim::Pending => {
                    return Err(ServiceError::Unavailable {
                        reason: "a message with this client_mid is being stored".into(),
                        retry_after_ms: 500,
                    });
                }
            }
        }
        let lock = self.svc.topics.get(tenant, &msg.topic);
        let mut state = lock.lock().await;
        let result = async {
            let mut floor = match state.floor {
                Some(f) => f,
                None => ports.messages.max_seq(tenant, &msg.topic).await?,
            };
            for _ in 0..SEQ_RETRIES {
                msg.seq = ports.seq.next_seq(tenant, &msg.topic, floor).await?;
                match ports.messages.append(tenant, &msg).await {
                    Ok(AppendOutcome::Stored) => return Ok((msg.seq, true)),
                    Ok(AppendOutcome::Duplicate { seq }) => return Ok((seq, false)),
                    Err(StoreError::Conflict(_)) => {
                        // The seq source fell behind what is stored (a lost counter): move it above the
                        // stored maximum and try again. A seq is never reused and no message overwritten.
                        floor = ports.messages.max_seq(tenant, &msg.topic).await?;
                        ports.seq.rebaseline(tenant, &msg.topic, floor).await?;
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

    pub(crate) async fn on_note(&mut self, m: MsgNote) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let stored = match resolve(&m.topic, me).ok_or(ServiceError::TopicNotFound)? {
            Resolved::Group(n) => n,
            Resolved::P2p { stored, .. } => stored,
            _ => return Err(ServiceError::PermissionDenied),
        };
        let (seq, what) = match m.what.as_str() {
            "kp" | "kpa" | "kpv" => {
                let mode =
                    self.svc.hub.attached_mode(tenant, &stored, self.handle.sid).ok_or(ServiceError::MustAttach)?;
                if !mode.has(AccessMode::WRITE) {
                    return Err(ServiceError::PermissionDenied);
                }
                (None, m.what.clone())
            }
            "read" | "recv" => {
                let seq = m
                    .seq
                    .filter(|s| *s > 0)
                    .ok_or_else(|| ServiceError::Malformed("note.seq must be positive".into()))?;
                let sub = self.svc.ports.subs.get_sub(tenant, &stored, me).await?.ok_or(ServiceError::NotFound)?;
                if !sub.mode().has(AccessMode::READ) {
                    return Err(ServiceError::PermissionDenied);
                }
                let topic =
                    self.svc.ports.topics.get_topic(tenant, &stored).await?.ok_or(ServiceError::TopicNotFound)?;
                if seq > topic.seq {
                    return Err(ServiceError::Malformed("note.seq is beyond the last message".into()));
                }
                let (read, recv) = if m.what == "read" { (Some(seq), None) } else { (None, Some(seq)) };
                let (new_recv, new_read) =
                    self.svc.ports.subs.update_sub_cursors(tenant, &stored, me, recv, read).await?;
                let unchanged = if m.what == "read" { new_read == sub.read } else { new_recv == sub.recv };
                if unchanged {
                    return Ok(());
                }
                (Some(seq), m.what.clone())
            }
            _ => return Err(ServiceError::NotImplemented),
        };
        let event =
            crate::realtime::Event::Info { topic: stored, from: me, what, seq, event: m.event, payload: m.payload };
        self.svc.dispatch(tenant, event, Some(self.handle.sid), Some(me)).await;
        Ok(())
    }
}
