//! `{sub}` and `{leave}`: attaching to `me`, `fnd`, groups (created from `new…`/`nch…` or joined) and P2P
//! topics (opened by the peer's `usr…`), and detaching with or without unsubscribing.

use crate::error::{ServiceError, ServiceResult};
use crate::handlers::account::clear_marker;
use crate::hub::Attached;
use crate::session::Session;
use crate::topics::{Resolved, resolve};
use crate::{now_millis, render};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use palaver_core::{AccessMode, DefaultAccess, RecordState, StoreError, Subscription, Topic, TopicKind, UserId};
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
                let sub = self.join_group(me, &name, &set).await?;
                self.attach(&name, me, sub.mode());
                (name.clone(), name, TopicKind::Group, Some(json!({ "acs": render::acs(sub.want, sub.given) })))
            }
            Resolved::P2p { peer, stored } => {
                if self.already_attached(&stored, id, &m.topic).await {
                    return Ok(());
                }
                let sub = self.open_p2p(me, peer, &stored).await?;
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

    async fn create_group(&self, me: UserId, set: &SetQuery) -> ServiceResult<(String, Subscription)> {
        let desc = set.desc.clone().unwrap_or_default();
        let defacs = self.parse_defacs(desc.defacs.as_ref(), DefaultAccess::GROUP)?;
        let tags = self.validate_tags(set.tags.as_deref().unwrap_or_default())?;
        let now = now_millis();
        let tenant = self.tenant();
        for _ in 0..4 {
            let name = format!("grp{}", URL_SAFE_NO_PAD.encode(rand::random::<u64>().to_le_bytes()));
            let topic = Topic {
                name: name.clone(),
                kind: TopicKind::Group,
                created: now,
                updated: now,
                touched: now,
                state: RecordState::Active,
                owner: Some(me),
                defacs,
                public: desc.public.clone().map(clear_marker).filter(|v| !v.is_null()),
                trusted: None,
                tags: tags.clone(),
                seq: 0,
                del_id: 0,
            };
            match self.svc.ports.topics.create_topic(tenant, &topic).await {
                Ok(()) => {}
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
            let sub = Subscription {
                topic: name.clone(),
                user: me,
                created: now,
                updated: now,
                deleted: None,
                want: AccessMode::OWNER_FULL,
                given: AccessMode::OWNER_FULL,
                read: 0,
                recv: 0,
                del_id: 0,
                private: desc.private.clone().map(clear_marker).filter(|v| !v.is_null()),
            };
            self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
            return Ok((name, sub));
        }
        Err(ServiceError::Internal("could not allocate a group name".into()))
    }

    async fn join_group(&self, me: UserId, name: &str, set: &SetQuery) -> ServiceResult<Subscription> {
        let tenant = self.tenant();
        let topic = self.svc.ports.topics.get_topic(tenant, name).await?.ok_or(ServiceError::TopicNotFound)?;
        if topic.state != RecordState::Active {
            return Err(ServiceError::TopicNotFound);
        }
        let wanted = match set.sub.as_ref().and_then(|s| s.mode.as_deref()) {
            Some(m) => AccessMode::parse(m).map_err(|e| ServiceError::Malformed(e.to_string()))?,
            None => None,
        };
        if let Some(mut sub) = self.svc.ports.subs.get_sub(tenant, name, me).await? {
            if let Some(want) = wanted.filter(|w| *w != sub.want) {
                let now = now_millis();
                self.svc.ports.subs.update_sub_mode(tenant, name, me, want, sub.given, now).await?;
                sub.want = want;
            }
            if !sub.mode().has(AccessMode::JOIN) {
                return Err(ServiceError::PermissionDenied);
            }
            return Ok(sub);
        }
        let given = topic.defacs.auth;
        if !given.has(AccessMode::JOIN) {
            return Err(ServiceError::PermissionDenied);
        }
        let count = self.svc.ports.subs.list_topic_subs(tenant, name).await?.len();
        if count >= self.svc.cfg.max_subscriber_count {
            return Err(ServiceError::Policy("the group has reached its subscriber limit".into()));
        }
        let now = now_millis();
        let sub = Subscription {
            topic: name.to_owned(),
            user: me,
            created: now,
            updated: now,
            deleted: None,
            want: wanted.unwrap_or(given),
            given,
            read: 0,
            recv: 0,
            del_id: 0,
            private: None,
        };
        self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
        self.members_changed(name).await;
        Ok(sub)
    }

    async fn open_p2p(&self, me: UserId, peer: UserId, stored: &str) -> ServiceResult<Subscription> {
        let tenant = self.tenant();
        let peer_user = self.svc.ports.users.get_user(tenant, peer).await?.ok_or(ServiceError::UserNotFound)?;
        if peer_user.state != RecordState::Active {
            return Err(ServiceError::UserNotFound);
        }
        let now = now_millis();
        if self.svc.ports.topics.get_topic(tenant, stored).await?.is_none() {
            let topic = Topic {
                name: stored.to_owned(),
                kind: TopicKind::P2p,
                created: now,
                updated: now,
                touched: now,
                state: RecordState::Active,
                owner: None,
                defacs: DefaultAccess { auth: AccessMode::P2P, anon: AccessMode::NONE },
                public: None,
                trusted: None,
                tags: Vec::new(),
                seq: 0,
                del_id: 0,
            };
            match self.svc.ports.topics.create_topic(tenant, &topic).await {
                Ok(()) | Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let mine = self.svc.ports.subs.get_sub(tenant, stored, me).await?;
        let theirs = self.svc.ports.subs.get_sub(tenant, stored, peer).await?;
        if theirs.is_none() {
            // The peer's side is granted what the peer's own defaults allow, limited to P2P bits.
            let given = AccessMode::P2P;
            let want = peer_user.defacs.auth.and(AccessMode::P2P);
            let sub = new_sub(stored, peer, want, given, now);
            self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
            let joined = crate::realtime::Event::Joined { topic: stored.to_owned(), user: peer };
            self.svc.dispatch(tenant, joined, None, Some(me)).await;
            self.notify_acs(peer, &me.to_string(), want, given).await;
        }
        let mine = match mine {
            Some(sub) => sub,
            None => {
                let sub = new_sub(stored, me, AccessMode::P2P, AccessMode::P2P, now);
                self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
                sub
            }
        };
        self.members_changed(stored).await;
        if !mine.mode().has(AccessMode::JOIN) {
            return Err(ServiceError::PermissionDenied);
        }
        Ok(mine)
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
            self.unsubscribe(me, &stored, &m.topic).await?;
        } else if !was_attached {
            self.reply(id, Some(&m.topic), Code::NotJoined, None).await;
            return Ok(());
        }
        self.reply(id, Some(&m.topic), Code::Ok, None).await;
        Ok(())
    }

    /// Removes the user's subscription; every session of the user is detached and told the topic is gone.
    async fn unsubscribe(&mut self, me: UserId, stored: &str, wire: &str) -> ServiceResult<()> {
        let tenant = self.tenant();
        if let Some(topic) = self.svc.ports.topics.get_topic(tenant, stored).await?
            && topic.owner == Some(me)
        {
            // The owner deletes the group instead of walking away from it.
            return Err(ServiceError::PermissionDenied);
        }
        match self.svc.ports.subs.delete_sub(tenant, stored, me, now_millis()).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(ServiceError::NotFound),
            Err(e) => return Err(e.into()),
        }
        self.evict(me, stored, Some(self.handle.sid)).await;
        self.svc.leave_online(tenant, me, stored).await;
        self.members_changed(stored).await;
        self.notify_gone(me, wire, Some(self.handle.sid)).await;
        Ok(())
    }
}

fn new_sub(topic: &str, user: UserId, want: AccessMode, given: AccessMode, now: i64) -> Subscription {
    Subscription {
        topic: topic.to_owned(),
        user,
        created: now,
        updated: now,
        deleted: None,
        want,
        given,
        read: 0,
        recv: 0,
        del_id: 0,
        private: None,
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
