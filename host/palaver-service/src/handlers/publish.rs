//! `{pub}` and `{note}`: storing a message under the next seq and fanning it out, and relaying typing, read
//! and receive notes.
//!
//! The publish path: check attachment and W; the hooks judge the message and it is admitted to its topic (the
//! first half, awaited by the session); the topic's drain claims the idempotency key if the client sent
//! `client_mid` and, under the topic's write lock, allocates the seq and queues the row; then, once the row
//! committed and every earlier seq of the topic settled, reply ctrl 202, fan out and mark the key done (the
//! second half, which runs on while the session reads its next frame). Nothing reaches another session before the store has committed
//! the message.

use crate::delivery::hub::SessionHandle;
use crate::error::{ServiceError, ServiceResult};
use crate::names::{Resolved, resolve};
use crate::session::Session;
use crate::usecases::pipeline::Admitted;
use crate::{Inner, now_millis, render};
use futures_util::FutureExt;
use palaver_core::ports::PublishContext;
use palaver_core::{AccessMode, AuditStatus, Message, Seq, SessionId, TenantId, TopicKind, UserId};
use palaver_proto::{Code, MsgNote, MsgPub};
use serde_json::json;
use std::sync::Arc;

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
        let timer = PubTimer { svc: self.svc.clone(), started: std::time::Instant::now() };
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
        let attachments = m.attachments;
        let mut head = m.head;
        if let Some(h) = head.as_mut() {
            // The sender is set by the server; a client-supplied one is a spoofing attempt.
            h.remove("sender");
        }
        let head = head.filter(|h| !h.is_empty());
        // An edit (`head.replace`) of the sender's own, live, recent message only.
        self.svc.edits(self.tenant()).check_edit(me, &stored, head.as_ref()).await?;
        // A call message: refused (486) while either party is in a call, before anything is stored.
        let call_peer = match head.as_ref().filter(|h| h.contains_key("webrtc")) {
            Some(h) => Some(self.svc.check_call_start(self.tenant(), &stored, me, h).await?),
            None => None,
        };
        let audio_only = head.as_ref().and_then(|h| h.get("aonly")).and_then(|v| v.as_bool()).unwrap_or(false);
        let msg = Message {
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
            session: self.internal_sid(),
            node: self.svc.cfg.node_id.clone(),
        };
        let tenant = self.tenant();
        // Held until the message settles: at most `max_publishes_in_flight` of this session's wait for their
        // commit, and beyond that the session reads no further frame until one does.
        let bound = self.svc.cfg.max_publishes_in_flight.max(1);
        let publishes = self.publishes.get_or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(bound)));
        let permit = publishes
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ServiceError::Unavailable { reason: "the session is closing".into(), retry_after_ms: 0 })?;
        // Revoked while the hooks ran: nothing is stored under credentials that no longer hold.
        let revoked = || self.is_closed();
        let admitted = self.svc.messages(tenant).admit(&ctx, msg, revoked).await?;
        let (id, topic) = (m.id, m.topic);
        let settling = Settling {
            id: id.clone(),
            topic: topic.clone(),
            stored,
            skip: m.noecho.then_some(self.handle.sid),
            sid: self.handle.sid,
            attachments,
            call_peer,
            audio_only,
            dev: self.hello.as_ref().and_then(|h| h.dev.clone()),
        };
        let mut settle = Box::pin(settle(self.svc.clone(), self.handle.clone(), tenant, admitted, settling));
        // A store that appended in place has settled already: the reply is queued before this returns.
        if let Some(result) = (&mut settle).now_or_never() {
            return result;
        }
        // Otherwise the session goes on reading while the commit completes; the ack, the fanout and any error
        // reply follow in the topic's seq order.
        let (svc, handle) = (self.svc.clone(), self.handle.clone());
        let task = async move {
            let result = settle.await;
            drop(permit);
            let _timer = timer;
            if let Err(e) = result {
                crate::session::report_error(&svc, &handle, id.as_deref(), Some(&topic), &e).await;
            }
        };
        tokio::spawn(tracing::Instrument::instrument(task, tracing::Span::current()));
        Ok(())
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
                if !self.svc.subscriptions(tenant).mark(me, &stored, m.what == "read", seq).await? {
                    return Ok(());
                }
                if m.what == "read" {
                    // The reader's other devices clear their notifications; only a buffer is written here.
                    self.svc.enqueue_read(tenant, &stored, seq, me, self.device_id());
                }
                (Some(seq), m.what.clone())
            }
            "call" if stored.starts_with("p2p") => return self.on_call_note(stored, m).await,
            "call" => return Err(ServiceError::PermissionDenied),
            _ => return Err(ServiceError::NotImplemented),
        };
        let event = crate::delivery::event::Event::Info {
            topic: stored,
            from: me,
            what,
            seq,
            event: m.event,
            payload: m.payload,
        };
        self.svc.dispatch(tenant, event, Some(self.handle.sid), Some(me)).await;
        Ok(())
    }
}

/// Records a publish's duration in `palaver_request_duration_seconds{kind="pub"}` when dropped: at its ack or
/// error, whether that comes before the handler returns or from the task that settles it.
struct PubTimer {
    svc: Arc<Inner>,
    started: std::time::Instant,
}

impl Drop for PubTimer {
    fn drop(&mut self) {
        self.svc.metrics.request_done("pub", self.started.elapsed());
    }
}

/// What the second half of a `{pub}` needs from its request and session.
struct Settling {
    id: Option<String>,
    /// The topic as the client named it.
    topic: String,
    stored: String,
    skip: Option<SessionId>,
    sid: SessionId,
    attachments: Vec<String>,
    call_peer: Option<UserId>,
    audio_only: bool,
    /// The push token the session registered with `{hi dev}`: its device gets no push for its own message.
    dev: Option<String>,
}

/// The second half of a `{pub}`: waits for the message to settle, acks it (ctrl 202, `audit:"pending"` when
/// held), then rings a call, records attachments, and hands the push task and the unattached readers'
/// notices over. The ack is queued in the topic's turn, before the delivery to attached readers.
async fn settle(
    svc: Arc<Inner>,
    handle: Arc<SessionHandle>,
    tenant: TenantId,
    admitted: Admitted,
    s: Settling,
) -> ServiceResult<()> {
    let ack = |seq: Seq, held: bool| {
        let params = if held { json!({ "seq": seq, "audit": "pending" }) } else { json!({ "seq": seq }) };
        render::ctrl_frame(s.id.as_deref(), Some(&s.topic), Code::Accepted, None, now_millis(), Some(params))
    };
    let mut acked = false;
    let on_stored = |seq: Seq, held: bool| {
        if s.id.is_some() {
            acked = handle.push(ack(seq, held));
        }
    };
    let published = svc.messages(tenant).settle(admitted, s.skip, on_stored).await?;
    let (seq, fresh, held, msg) = (published.seq, published.fresh, published.held, published.msg);
    if s.id.is_some() && !acked {
        // A retry answered from storage, or the session's queue was full: reply the waiting way.
        handle.send(ack(seq, held)).await;
    }
    // A call that does not ring (a party got busy since the check) pushes nobody about its message.
    let mut rings = true;
    if let Some(callee) = s.call_peer
        && fresh
        && !held
    {
        rings = svc.start_call(tenant, &s.stored, seq, msg.from, callee, s.sid, s.audio_only).await;
    }
    if fresh && !s.attachments.is_empty() {
        // Recorded for a held message too: its files must outlive the review, and nobody learns their URLs
        // before the message is released.
        svc.files(tenant).link(&s.stored, seq, msg.from, &s.attachments, !held).await?;
    }
    if fresh && !held {
        if rings {
            // The push task is only handed to a buffer: nothing here waits for the queue or a provider.
            let device = s.dev.as_deref().map(crate::usecases::devices::device_id);
            svc.enqueue_push(tenant, &msg, device);
        }
        svc.enqueue_published(tenant, &msg);
        svc.notify_unattached(tenant, &msg).await;
    }
    Ok(())
}
