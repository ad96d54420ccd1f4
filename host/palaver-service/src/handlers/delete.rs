//! `{del}`: message ranges (soft for oneself, hard for everyone), a member's subscription, a whole topic, or the
//! user's own account.

use crate::error::{ServiceError, ServiceResult};

use crate::names::{Resolved, resolve};
use crate::session::Session;
use palaver_core::ports::ControlScope;
use palaver_core::{RecordState, SeqRange as DomainRange, TopicKind, UserId};
use palaver_proto::{Code, MsgDel, MsgPres};
use serde_json::json;

/// The most ranges one `{del}` may name.
const MAX_RANGES: usize = 256;

impl Session {
    pub(crate) async fn on_del(&mut self, m: MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let id = m.id.as_deref();
        match m.what.as_deref() {
            // Neither names a topic (tinode-sdk sends none).
            Some("user") => return self.del_user(id, &m).await,
            Some("cred") => return self.del_credential(id, &m).await,
            _ => {}
        }
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
            other => Err(ServiceError::Malformed(format!("del.what {other:?} is not known"))),
        }
    }

    /// `{del what:"user"}`: the user deletes their own account (`user` absent or their own id; nobody deletes
    /// another's over the socket, an admin uses `user.delete`). The reply goes out, then this session closes
    /// like the user's others.
    async fn del_user(&mut self, id: Option<&str>, m: &MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        if let Some(target) = m.user.as_deref().filter(|u| !u.is_empty())
            && UserId::parse(target).ok() != Some(me)
        {
            return Err(ServiceError::PermissionDenied);
        }
        let actor = ("user", Some(me.0 as i64));
        let result = self.svc.delete_account(tenant, me, m.hard, actor, Some(self.handle.sid)).await;
        match result {
            Ok(_) => self.reply(id, None, Code::Ok, None).await,
            Err(e) => {
                // Failed after the account was marked deleted (leaving its topics, say): this session goes like
                // its others, and the error says the rest is not done. Failed before: nothing changed.
                let account = self.svc.accounts(tenant).user(me).await;
                if !matches!(account, Ok(Some(ref u)) if u.state == RecordState::Deleted) {
                    return Err(e);
                }
                self.reply_error(id, None, &e).await;
            }
        }
        if let Err(e) = self.svc.control(tenant, me, ControlScope::User, "account deleted", None).await {
            // The others could not be told; this one at least goes now.
            tracing::warn!(error = %e, user = %me, "a deleted account's sessions could not all be closed");
            self.svc.close_controlled(&self.handle, "account deleted", "local");
        }
        Ok(())
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
            let hi = r.hi.unwrap_or(r.low.saturating_add(1));
            if r.low < 1 || hi <= r.low {
                return Err(ServiceError::Malformed("del.delseq ranges must have 1 ≤ low < hi".into()));
            }
            domain.push(DomainRange { low: r.low, hi });
        }
        // Without D a hard delete is a recall of one's own recent messages, or else quietly a soft one.
        let del_id = self.svc.messages(tenant).delete(me, stored, domain, m.hard, ranges, self.handle.sid).await?;
        self.reply(id, Some(&m.topic), Code::Ok, Some(json!({ "del": del_id }))).await;
        Ok(())
    }

    async fn del_sub(&self, id: Option<&str>, stored: &str, kind: TopicKind, m: &MsgDel) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let target = m.user.as_deref().ok_or_else(|| ServiceError::Malformed("del.user is required".into()))?;
        let target = UserId::parse(target).map_err(|_| ServiceError::Malformed("del.user".into()))?;
        self.svc.subscriptions(tenant).remove_member(me, stored, kind, target).await?;
        self.reply(id, Some(&m.topic), Code::Ok, None).await;
        Ok(())
    }

    async fn del_topic(&mut self, id: Option<&str>, stored: &str, kind: TopicKind, wire: &str) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let topic = self.svc.stored_topics(tenant).get(stored).await?;
        if kind == TopicKind::P2p {
            self.svc.subscriptions(tenant).leave_p2p(me, stored, wire, self.handle.sid).await?;
            self.attached.remove(stored);
            self.reply(id, Some(wire), Code::Ok, None).await;
            return Ok(());
        }
        let users = self.svc.stored_topics(tenant).delete_group(me, &topic, self.handle.sid).await?;
        self.svc.hub.detach(tenant, stored, self.handle.sid);
        self.attached.remove(stored);
        self.svc.leave_online(tenant, me, stored).await;
        let gone =
            MsgPres { topic: "me".into(), src: Some(stored.to_owned()), what: "gone".into(), ..MsgPres::default() };
        self.push_me_pres_many(users, gone, Some(self.handle.sid)).await;
        self.reply(id, Some(wire), Code::Ok, None).await;
        Ok(())
    }
}
