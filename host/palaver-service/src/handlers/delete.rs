//! `{del}`: message ranges (soft for oneself, hard for everyone), a member's subscription, or a whole topic.

use crate::error::{ServiceError, ServiceResult};
use crate::now_millis;

use crate::realtime::Event;
use crate::session::Session;
use crate::topics::{Resolved, resolve};
use palaver_core::{AccessMode, DeleteMessages, SeqRange as DomainRange, StoreError, TopicKind, UserId};
use palaver_proto::{Code, MsgDel, MsgPres};
use serde_json::json;

/// The most ranges one `{del}` may name.
const MAX_RANGES: usize = 256;

impl Session {
    pub(crate) async fn on_del(&mut self, m: MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let id = m.id.as_deref();
        let (stored, kind) = match resolve(&m.topic, me).ok_or(ServiceError::TopicNotFound)? {
            Resolved::Group(n) => (n, TopicKind::Group),
            Resolved::P2p { stored, .. } => (stored, TopicKind::P2p),
            Resolved::Me | Resolved::Fnd => return Err(ServiceError::PermissionDenied),
            Resolved::NewGroup { .. } => return Err(ServiceError::TopicNotFound),
        };
        match m.what.as_deref().unwrap_or("msg") {
            "msg" => self.del_messages(id, &stored, &m).await,
            "sub" => self.del_sub(id, &stored, kind, &m).await,
            "topic" => self.del_topic(id, &stored, kind, &m.topic).await,
            "user" | "cred" => Err(ServiceError::NotImplemented),
            other => Err(ServiceError::Malformed(format!("del.what {other:?} is not known"))),
        }
    }

    async fn del_messages(&self, id: Option<&str>, stored: &str, m: &MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let ranges = m.delseq.as_deref().unwrap_or_default();
        if ranges.is_empty() || ranges.len() > MAX_RANGES {
            return Err(ServiceError::Malformed(format!("del.delseq must hold 1–{MAX_RANGES} ranges")));
        }
        let mut domain = Vec::with_capacity(ranges.len());
        for r in ranges {
            let hi = r.hi.unwrap_or(r.low + 1);
            if r.low < 1 || hi <= r.low {
                return Err(ServiceError::Malformed("del.delseq ranges must have 1 ≤ low < hi".into()));
            }
            domain.push(DomainRange { low: r.low, hi });
        }
        let sub = self.svc.ports.subs.get_sub(tenant, stored, me).await?.ok_or(ServiceError::PermissionDenied)?;
        if !sub.mode().has(AccessMode::READ) {
            return Err(ServiceError::PermissionDenied);
        }
        // Without D a hard delete quietly becomes a soft one, as in Tinode.
        let hard = m.hard && sub.mode().has(AccessMode::DELETE);
        let request = DeleteMessages { ranges: domain, hard, for_user: me, when: now_millis() };
        let del_id = self.svc.ports.messages.delete_messages(tenant, stored, &request).await?;
        let event = Event::Deleted { topic: stored.to_owned(), by: me, hard, clear: del_id, delseq: ranges.to_vec() };
        self.svc.dispatch(tenant, event, Some(self.handle.sid), Some(me)).await;
        self.reply(id, Some(&m.topic), Code::Ok, Some(json!({ "del": del_id }))).await;
        Ok(())
    }

    async fn del_sub(&self, id: Option<&str>, stored: &str, kind: TopicKind, m: &MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let target = m.user.as_deref().ok_or_else(|| ServiceError::Malformed("del.user is required".into()))?;
        let target = UserId::parse(target).map_err(|_| ServiceError::Malformed("del.user".into()))?;
        if kind != TopicKind::Group || target == me {
            return Err(ServiceError::PermissionDenied);
        }
        let topic = self.svc.ports.topics.get_topic(tenant, stored).await?.ok_or(ServiceError::TopicNotFound)?;
        let mine = self.svc.ports.subs.get_sub(tenant, stored, me).await?.ok_or(ServiceError::PermissionDenied)?;
        if !mine.mode().has(AccessMode::APPROVE) || topic.owner == Some(target) {
            return Err(ServiceError::PermissionDenied);
        }
        match self.svc.ports.subs.delete_sub(tenant, stored, target, now_millis()).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(ServiceError::UserNotFound),
            Err(e) => return Err(e.into()),
        }
        self.evict(target, stored, None).await;
        self.members_changed(stored).await;
        self.notify_gone(target, stored, None).await;
        self.reply(id, Some(&m.topic), Code::Ok, None).await;
        Ok(())
    }

    async fn del_topic(&mut self, id: Option<&str>, stored: &str, kind: TopicKind, wire: &str) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let topic = self.svc.ports.topics.get_topic(tenant, stored).await?.ok_or(ServiceError::TopicNotFound)?;
        if kind == TopicKind::P2p {
            // Deleting a P2P topic only removes the caller's side of it.
            match self.svc.ports.subs.delete_sub(tenant, stored, me, now_millis()).await {
                Ok(()) | Err(StoreError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
            self.evict(me, stored, Some(self.handle.sid)).await;
            self.svc.hub.detach_user(tenant, stored, me);
            self.attached.remove(stored);
            self.svc.leave_online(tenant, me, stored).await;
            self.members_changed(stored).await;
            self.notify_gone(me, wire, Some(self.handle.sid)).await;
            self.reply(id, Some(wire), Code::Ok, None).await;
            return Ok(());
        }
        if topic.owner != Some(me) {
            return Err(ServiceError::PermissionDenied);
        }
        let members = self.svc.ports.subs.list_topic_subs(tenant, stored).await?;
        self.svc.ports.topics.delete_topic(tenant, stored).await?;
        if let Err(e) = self.svc.ports.seq.forget(tenant, stored).await {
            tracing::debug!(error = %e, "seq counter not dropped");
        }
        let event = Event::TopicGone { topic: stored.to_owned() };
        self.svc.dispatch(tenant, event, Some(self.handle.sid), Some(me)).await;
        self.svc.hub.detach(tenant, stored, self.handle.sid);
        self.attached.remove(stored);
        self.svc.leave_online(tenant, me, stored).await;
        let users = members.into_iter().map(|s| s.user).collect();
        let gone =
            MsgPres { topic: "me".into(), src: Some(stored.to_owned()), what: "gone".into(), ..MsgPres::default() };
        self.push_me_pres_many(users, gone, Some(self.handle.sid)).await;
        self.reply(id, Some(wire), Code::Ok, None).await;
        Ok(())
    }
}
