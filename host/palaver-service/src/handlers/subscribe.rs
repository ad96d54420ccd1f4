//! `{sub}` and `{leave}`: attaching to `me`, `fnd`, groups (created from `new…`/`nch…` or joined) and P2P
//! topics (opened by the peer's `usr…`), and detaching with or without unsubscribing.

use crate::delivery::hub::Attached;
use crate::error::{ServiceError, ServiceResult};
use crate::handlers::account::clear_marker;
use crate::names::{Resolved, resolve};
use crate::render;
use crate::session::Session;
use crate::usecases::topics::NewGroup;
use palaver_core::{AccessMode, DefaultAccess, Subscription, TopicKind, UserId};
use palaver_proto::{Code, MsgLeave, MsgSub, SetQuery};
use serde_json::json;

impl Session {
    pub(crate) async fn on_sub(&mut self, m: MsgSub) -> ServiceResult<()> {
        let me = self.me()?;
        let id = m.id.as_deref();
        let resolved = resolve(&m.topic, me).ok_or(if m.topic.starts_with("usr") {
            ServiceError::UserNotFound
        } else {
            ServiceError::TopicNotFound
        })?;
        let set = m.set.unwrap_or_default();
        if let Some(d) = set.desc.as_ref() {
            self.check_desc_size(d)?;
        }
        let (stored, wire, kind, params) = match resolved {
            Resolved::Me => {
                if self.already_attached("me", id, &m.topic).await {
                    return Ok(());
                }
                self.attached.insert("me".into());
                self.handle.set_on_me(true);
                let first = self.sessions_on_me(me) == 1;
                if first {
                    self.announce_presence(me, true).await;
                }
                ("me".to_owned(), "me".to_owned(), TopicKind::Me, None)
            }
            Resolved::Fnd => {
                if self.already_attached("fnd", id, &m.topic).await {
                    return Ok(());
                }
                self.attached.insert("fnd".into());
                if let Some(q) = set.desc.as_ref().and_then(|d| d.public.as_ref()) {
                    self.fnd_query = parse_query(q);
                }
                ("fnd".to_owned(), "fnd".to_owned(), TopicKind::Fnd, None)
            }
            Resolved::NewGroup { tmp, channel: _ } => {
                let (name, sub) = self.create_group(me, &set).await?;
                self.attach(&name, me, sub.mode());
                let params = json!({ "tmpname": tmp, "acs": render::acs(sub.want, sub.given) });
                (name.clone(), name, TopicKind::Group, Some(params))
            }
            Resolved::Group(name) => {
                if self.already_attached(&name, id, &m.topic).await {
                    return Ok(());
                }
                let mode = set.sub.as_ref().and_then(|s| s.mode.as_deref());
                let sub = self
                    .svc
                    .subscriptions(self.tenant())
                    .join_group(me, &name, mode, self.anon, self.internal_sid())
                    .await?;
                self.attach(&name, me, sub.mode());
                (name.clone(), name, TopicKind::Group, Some(json!({ "acs": render::acs(sub.want, sub.given) })))
            }
            Resolved::P2p { peer, stored } => {
                if self.already_attached(&stored, id, &m.topic).await {
                    return Ok(());
                }
                let sub = self.svc.stored_topics(self.tenant()).open_p2p(me, peer, &stored, self.anon).await?;
                let wire = peer.to_string();
                self.attach(&stored, me, sub.mode());
                (stored, wire, TopicKind::P2p, Some(json!({ "acs": render::acs(sub.want, sub.given) })))
            }
        };
        if matches!(kind, TopicKind::Group | TopicKind::P2p) {
            // Before the reply, so that whatever is published after it reaches this node.
            self.svc.join_online(self.tenant(), me, vec![stored.clone()]).await;
        }
        self.reply(id, Some(&wire), Code::Ok, params).await;
        if let Some(get) = m.get.filter(|g| !g.what.trim().is_empty()) {
            self.run_get(id, &stored, &wire, kind, &get, false).await?;
        }
        Ok(())
    }

    /// Answers 304 and returns true if this session is already attached to `stored`.
    async fn already_attached(&self, stored: &str, id: Option<&str>, wire: &str) -> bool {
        if self.attached.contains(stored) && (stored == "me" || stored == "fnd" || self.hub_attached(stored)) {
            self.reply(id, Some(wire), Code::AlreadySubscribed, None).await;
            return true;
        }
        false
    }

    fn hub_attached(&self, stored: &str) -> bool {
        self.svc.hub.attached_mode(self.tenant(), stored, self.handle.sid).is_some()
    }

    fn attach(&mut self, stored: &str, me: UserId, mode: AccessMode) {
        self.attached.insert(stored.to_owned());
        self.svc.hub.attach(self.tenant(), stored, Attached { session: self.handle.clone(), user: me, mode });
    }

    /// How many of the user's sessions on this node are attached to `me`.
    fn sessions_on_me(&self, user: UserId) -> usize {
        let mut n = 0;
        self.svc.hub.for_each_user_session(self.tenant(), user, |s| n += usize::from(s.on_me()));
        n
    }

    /// Parses a new group's description, tags and default access, after checking `me` may belong to one more
    /// group.
    async fn create_group(&self, me: UserId, set: &SetQuery) -> ServiceResult<(String, Subscription)> {
        self.svc.subscriptions(self.tenant()).check_group_count(me).await?;
        let desc = set.desc.clone().unwrap_or_default();
        let defacs = self.parse_defacs(desc.defacs.as_ref(), DefaultAccess::GROUP)?;
        let tags = self.validate_tags(set.tags.as_deref().unwrap_or_default())?;
        let new = NewGroup {
            defacs,
            tags,
            public: desc.public.clone().map(clear_marker).filter(|v| !v.is_null()),
            private: desc.private.clone().map(clear_marker).filter(|v| !v.is_null()),
        };
        self.svc.stored_topics(self.tenant()).create_group(me, new).await
    }

    pub(crate) async fn on_leave(&mut self, m: MsgLeave) -> ServiceResult<()> {
        let me = self.me()?;
        let id = m.id.as_deref();
        let resolved = resolve(&m.topic, me).ok_or(ServiceError::TopicNotFound)?;
        let stored = match &resolved {
            Resolved::Me => "me".to_owned(),
            Resolved::Fnd => "fnd".to_owned(),
            Resolved::Group(n) => n.clone(),
            Resolved::P2p { stored, .. } => stored.clone(),
            Resolved::NewGroup { .. } => return Err(ServiceError::TopicNotFound),
        };
        let was_attached = self.attached.remove(&stored);
        if matches!(resolved, Resolved::Me | Resolved::Fnd) {
            if stored == "me" && was_attached {
                self.handle.set_on_me(false);
                if self.sessions_on_me(me) == 0 {
                    self.announce_presence(me, false).await;
                }
            }
            let code = if was_attached { Code::Ok } else { Code::NotJoined };
            self.reply(id, Some(&m.topic), code, None).await;
            return Ok(());
        }
        self.svc.hub.detach(self.tenant(), &stored, self.handle.sid);
        if m.unsub {
            self.svc.subscriptions(self.tenant()).unsubscribe(me, &stored, &m.topic, self.handle.sid).await?;
        } else if !was_attached {
            self.reply(id, Some(&m.topic), Code::NotJoined, None).await;
            return Ok(());
        }
        self.reply(id, Some(&m.topic), Code::Ok, None).await;
        Ok(())
    }
}

/// Turns a `fnd` query (a string of tags separated by spaces or commas) into lower-cased tags.
pub(crate) fn parse_query(v: &serde_json::Value) -> Vec<String> {
    let Some(s) = v.as_str() else { return Vec::new() };
    if s == palaver_proto::NULL_VALUE {
        return Vec::new();
    }
    let mut tags: Vec<String> =
        s.split([' ', ',', '\t']).filter(|t| !t.is_empty()).map(|t| t.trim().to_lowercase()).collect();
    tags.sort();
    tags.dedup();
    tags
}
