//! `{pub}` and `{note}`: storing a message under the next seq and fanning it out, and relaying typing, read
//! and receive notes.
//!
//! The publish path: check attachment and W; claim the idempotency key if the client sent `client_mid`; under
//! the topic's write lock allocate the seq and store the message; mark the key done; reply ctrl 202; then fan
//! out. Nothing reaches another session before the store has acknowledged the message.

use crate::error::{ServiceError, ServiceResult};
use crate::names::{Resolved, resolve};
use crate::session::Session;
use crate::{now_millis, render};
use palaver_core::ports::PublishContext;
use palaver_core::{AccessMode, AuditStatus, Message, Seq, TopicKind, UserId};
use palaver_proto::{Code, MsgNote, MsgPub};
use serde_json::json;

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
        let skip = m.noecho.then_some(self.handle.sid);
        let ack = |seq: Seq, held: bool| {
            let params = if held { json!({ "seq": seq, "audit": "pending" }) } else { json!({ "seq": seq }) };
            render::ctrl_frame(m.id.as_deref(), Some(&m.topic), Code::Accepted, None, now_millis(), Some(params))
        };
        // Revoked while the hooks ran: nothing is stored under credentials that no longer hold.
        let revoked = || self.is_closed();
        // The ack is queued under the topic's write lock, before the delivery to attached readers.
        let mut acked = false;
        let on_stored = |seq: Seq, held: bool| {
            if m.id.is_some() {
                acked = self.handle.push(ack(seq, held));
            }
        };
        let published = self.svc.messages(tenant).publish(&ctx, msg, skip, revoked, on_stored).await?;
        let (seq, fresh, held, msg) = (published.seq, published.fresh, published.held, published.msg);
        if m.id.is_some() && !acked {
            // A retry answered from storage, or our own queue was full: reply the waiting way.
            self.send(ack(seq, held)).await;
        }
        // A call that does not ring (a party got busy since the check) pushes nobody about its message.
        let mut rings = true;
        if let Some(callee) = call_peer
            && fresh
            && !held
        {
            rings = self.svc.start_call(tenant, &stored, seq, me, callee, self.handle.sid, audio_only).await;
        }
        if fresh && !attachments.is_empty() {
            // Recorded for a held message too: its files must outlive the review, and nobody learns their
            // URLs before the message is released.
            self.svc.files(tenant).link(&stored, seq, me, &attachments, !held).await?;
        }
        if fresh && !held {
            if rings {
                // The push task is only handed to a buffer: nothing here waits for the queue or a provider.
                self.svc.enqueue_push(tenant, &msg, self.device_id());
            }
            self.svc.notify_unattached(tenant, &msg).await;
        }
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
        let event = crate::delivery::dispatch::Event::Info {
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
