//! `{get}` and `{set}`: topic descriptions, subscriber and contact lists, history pages, deletions, tags, and
//! their changes.

use crate::error::{ServiceError, ServiceResult};
use crate::handlers::account::clear_marker;
use crate::handlers::subscribe::parse_query;
use crate::names::{Resolved, resolve, wire_name};
use crate::now_millis;
use crate::render::{self, ts};
use crate::session::Session;
use palaver_core::{AccessMode, DefaultAccess, Subscription, Topic, TopicKind, TopicUpdate, UserId, UserUpdate};
use palaver_proto::{
    Code, DefaultAcs, DelValues, GetQuery, LastSeen, MsgData, MsgGet, MsgMeta, MsgSet, SeqRange, ServerMsg, Timestamp,
    TopicDesc, TopicSub,
};
use serde_json::json;

impl Session {
    /// Validates and normalises tags against the configured limits.
    pub(crate) fn validate_tags(&self, tags: &[String]) -> ServiceResult<Vec<String>> {
        crate::usecases::accounts::check_tags(&self.svc.cfg, tags)
    }

    /// Parses `defacs`, keeping `base` for a missing part.
    pub(crate) fn parse_defacs(&self, d: Option<&DefaultAcs>, base: DefaultAccess) -> ServiceResult<DefaultAccess> {
        let Some(d) = d else { return Ok(base) };
        let parse = |s: Option<&String>, dflt: AccessMode| -> ServiceResult<AccessMode> {
            match s {
                None => Ok(dflt),
                Some(s) => Ok(AccessMode::parse_with_base(s, dflt)
                    .map_err(|e| ServiceError::Malformed(e.to_string()))?
                    .unwrap_or(dflt)),
            }
        };
        // Owner rights cannot be handed out by default.
        let auth = parse(d.auth.as_ref(), base.auth)?;
        let anon = parse(d.anon.as_ref(), base.anon)?;
        Ok(DefaultAccess {
            auth: AccessMode(auth.0 & !AccessMode::OWNER.0),
            anon: AccessMode(anon.0 & !AccessMode::OWNER.0),
        })
    }

    pub(crate) async fn on_get(&mut self, m: MsgGet) -> ServiceResult<()> {
        let me = self.me()?;
        let (stored, kind) = match resolve(&m.topic, me).ok_or(ServiceError::TopicNotFound)? {
            Resolved::Me => ("me".to_owned(), TopicKind::Me),
            Resolved::Fnd => ("fnd".to_owned(), TopicKind::Fnd),
            Resolved::Group(n) => (n, TopicKind::Group),
            Resolved::P2p { stored, .. } => (stored, TopicKind::P2p),
            Resolved::NewGroup { .. } => return Err(ServiceError::TopicNotFound),
        };
        self.run_get(m.id.as_deref(), &stored, &m.topic, kind, &m.query, true).await
    }

    /// Answers each part of a get query in Tinode's order: desc, sub, data, del, tags.
    pub(crate) async fn run_get(
        &self,
        id: Option<&str>,
        stored: &str,
        wire: &str,
        kind: TopicKind,
        q: &GetQuery,
        standalone: bool,
    ) -> ServiceResult<()> {
        let what: Vec<&str> = q.what.split_whitespace().collect();
        let known = ["desc", "sub", "data", "del", "tags", "cred"];
        if standalone && !what.iter().any(|w| known.contains(w)) {
            return Err(ServiceError::Malformed("get.what names nothing known".into()));
        }
        let me = self.me()?;
        let tenant = self.tenant();
        let (topic, sub) = match kind {
            TopicKind::Group | TopicKind::P2p => {
                let topics = self.svc.stored_topics(tenant);
                let (topic, sub) = topics.visible_to(stored, me, kind, &what, &known).await?;
                (Some(topic), sub)
            }
            _ => (None, None),
        };
        // Tinode answers the parts in a fixed order, whatever order the client listed them in.
        for w in known.into_iter().filter(|k| what.contains(k)) {
            match w {
                "desc" => self.get_desc(id, wire, kind, topic.as_ref(), sub.as_ref(), q).await?,
                "sub" => self.get_subs(id, stored, wire, kind, topic.as_ref(), q).await?,
                "data" => self.get_data(id, stored, wire, sub.as_ref(), q).await?,
                "del" => self.get_del(id, stored, wire, sub.as_ref()).await?,
                "tags" => self.get_tags(id, wire, kind, topic.as_ref()).await?,
                // Credentials are the user's own: on `me` only, as Tinode answers (405 elsewhere).
                "cred" if kind == TopicKind::Me => self.get_credentials(id, wire).await?,
                "cred" => return Err(ServiceError::NotAllowed),
                _ => {}
            }
        }
        Ok(())
    }

    async fn send_meta(&self, meta: MsgMeta) {
        self.send(render::frame(&ServerMsg::Meta(meta))).await;
    }

    async fn get_desc(
        &self,
        id: Option<&str>,
        wire: &str,
        kind: TopicKind,
        topic: Option<&Topic>,
        sub: Option<&Subscription>,
        q: &GetQuery,
    ) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let ims = q.desc.as_ref().and_then(|d| d.ims).map(Timestamp::millis);
        let mut desc = TopicDesc::default();
        match (kind, topic) {
            (TopicKind::Me, _) => {
                let user = self.svc.accounts(tenant).user(me).await?.ok_or(ServiceError::UserNotFound)?;
                if ims.is_some_and(|t| user.updated <= t) {
                    return Ok(());
                }
                desc.created = ts(user.created);
                desc.updated = ts(user.updated);
                desc.defacs = Some(render::defacs(&user.defacs));
                desc.public = user.public;
                desc.trusted = user.trusted;
                desc.acs = Some(render::acs(AccessMode::SELF, AccessMode::SELF));
            }
            (TopicKind::Fnd, _) => {}
            (_, Some(topic)) => {
                if ims.is_some_and(|t| topic.updated <= t && sub.is_none_or(|s| s.updated <= t)) {
                    return Ok(());
                }
                desc.created = ts(topic.created);
                desc.updated = ts(topic.updated);
                desc.public = topic.public.clone();
                desc.trusted = topic.trusted.clone();
                // A stranger sees what a directory would show, not the topic's activity or access.
                if let Some(s) = sub {
                    desc.touched = ts(topic.touched);
                    desc.seq = Some(topic.seq);
                    desc.defacs = Some(render::defacs(&topic.defacs));
                    desc.acs = Some(render::acs(s.want, s.given));
                    desc.read = Some(s.read);
                    desc.recv = Some(s.recv);
                    desc.clear = Some(s.del_id.max(topic.del_id));
                    desc.private = s.private.clone();
                    if let Some(peer) = palaver_core::p2p_peer(&topic.name, me).filter(|_| kind == TopicKind::P2p) {
                        // A P2P topic is described by the peer: their profile, defaults and presence.
                        if let Some(u) = self.svc.accounts(tenant).user(peer).await? {
                            desc.public = u.public;
                            desc.trusted = u.trusted;
                            desc.defacs = Some(render::defacs(&u.defacs));
                            desc.seen = u.last_seen.map(|w| LastSeen { when: Timestamp(w), ua: u.user_agent });
                        }
                        desc.online = self.online(peer).await;
                    }
                }
            }
            _ => return Err(ServiceError::TopicNotFound),
        }
        let mut meta = MsgMeta::new(id, wire, Timestamp(now_millis()));
        meta.desc = Some(desc);
        self.send_meta(meta).await;
        Ok(())
    }

    async fn online(&self, user: UserId) -> Option<bool> {
        self.svc.presence(self.tenant()).is_online(user).await
    }

    async fn get_subs(
        &self,
        id: Option<&str>,
        stored: &str,
        wire: &str,
        kind: TopicKind,
        topic: Option<&Topic>,
        q: &GetQuery,
    ) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let limit = q.sub.as_ref().and_then(|s| s.limit).filter(|l| *l > 0).map_or(usize::MAX, |l| l as usize);
        let ims = q.sub.as_ref().and_then(|s| s.ims).map(Timestamp::millis);
        let mut out = Vec::new();
        match kind {
            TopicKind::Me => {
                // `sub.topic` narrows the list to one contact or group, as the SDK asks after `{pres acs}`.
                let only = q.sub.as_ref().and_then(|s| s.topic.as_deref());
                for s in self.svc.subscriptions(tenant).of_user(me).await? {
                    if ims.is_some_and(|t| s.updated <= t) || only.is_some_and(|o| wire_name(&s.topic, me) != o) {
                        continue;
                    }
                    let Some(t) = self.svc.stored_topics(tenant).find(&s.topic).await? else { continue };
                    let mut item = TopicSub {
                        topic: Some(wire_name(&s.topic, me)),
                        updated: ts(s.updated),
                        touched: ts(t.touched),
                        acs: Some(render::acs(s.want, s.given)),
                        read: Some(s.read),
                        recv: Some(s.recv),
                        seq: Some(t.seq),
                        clear: Some(s.del_id.max(t.del_id)),
                        private: s.private.clone(),
                        public: t.public.clone(),
                        ..TopicSub::default()
                    };
                    if let Some(peer) = palaver_core::p2p_peer(&s.topic, me) {
                        if let Some(u) = self.svc.accounts(tenant).user(peer).await? {
                            item.public = u.public;
                            item.seen = u.last_seen.map(|w| LastSeen { when: Timestamp(w), ua: u.user_agent });
                        }
                        item.online = self.online(peer).await;
                    }
                    out.push(item);
                }
            }
            TopicKind::Fnd => {
                if !self.fnd_query.is_empty() {
                    let n = limit.min(self.svc.cfg.max_page);
                    let topics = self.svc.stored_topics(tenant);
                    for u in topics.find_users_by_tags(&self.fnd_query, n + 1).await? {
                        if u.id != me {
                            out.push(TopicSub {
                                user: Some(u.id.to_string()),
                                updated: ts(u.updated),
                                public: u.public,
                                acs: Some(render::acs(AccessMode::NONE, u.defacs.auth)),
                                ..TopicSub::default()
                            });
                        }
                    }
                    for t in topics.find_by_tags(&self.fnd_query, n).await? {
                        out.push(TopicSub {
                            topic: Some(t.name.clone()),
                            updated: ts(t.updated),
                            public: t.public,
                            acs: Some(render::acs(AccessMode::NONE, t.defacs.auth)),
                            ..TopicSub::default()
                        });
                    }
                }
            }
            TopicKind::Group | TopicKind::P2p => {
                if topic.is_none() {
                    return Err(ServiceError::TopicNotFound);
                }
                let only = q.sub.as_ref().and_then(|s| s.user.as_deref());
                for s in self.svc.subscriptions(tenant).of_topic(stored).await? {
                    if ims.is_some_and(|t| s.updated <= t) || only.is_some_and(|o| s.user.to_string() != o) {
                        continue;
                    }
                    let user = self.svc.accounts(tenant).user(s.user).await?;
                    out.push(TopicSub {
                        user: Some(s.user.to_string()),
                        updated: ts(s.updated),
                        acs: Some(render::acs(s.want, s.given)),
                        read: Some(s.read),
                        recv: Some(s.recv),
                        public: user.as_ref().and_then(|u| u.public.clone()),
                        online: self.online(s.user).await,
                        private: (s.user == me).then(|| s.private.clone()).flatten(),
                        ..TopicSub::default()
                    });
                }
            }
            TopicKind::Sys => {}
        }
        out.truncate(limit);
        if out.is_empty() {
            self.reply(id, Some(wire), Code::NoContent, Some(json!({ "what": "sub" }))).await;
        } else {
            let mut meta = MsgMeta::new(id, wire, Timestamp(now_millis()));
            meta.sub = Some(out);
            self.send_meta(meta).await;
        }
        Ok(())
    }

    async fn get_data(
        &self,
        id: Option<&str>,
        stored: &str,
        wire: &str,
        sub: Option<&Subscription>,
        q: &GetQuery,
    ) -> ServiceResult<()> {
        let me = self.me()?;
        if stored == "me" || stored == "fnd" {
            return Err(ServiceError::Malformed("me and fnd have no messages".into()));
        }
        let sub = sub.ok_or(ServiceError::PermissionDenied)?;
        if !sub.mode().has(AccessMode::READ) {
            return Err(ServiceError::PermissionDenied);
        }
        let opts = q.data.clone().unwrap_or_default();
        let cfg = &self.svc.cfg;
        let limit = opts.limit.filter(|l| *l > 0).map_or(cfg.default_page, |l| (l as usize).min(cfg.max_page));
        let windows: Vec<(Option<i64>, Option<i64>)> = match opts.ranges.as_deref().filter(|r| !r.is_empty()) {
            Some(ranges) if ranges.len() > 64 => {
                return Err(ServiceError::Malformed("get.data.ranges holds more than 64 ranges".into()));
            }
            Some(ranges) => {
                ranges.iter().map(|r| (Some(r.low.max(1)), Some(r.hi.unwrap_or(r.low.saturating_add(1))))).collect()
            }
            None => vec![(opts.since.filter(|s| *s > 0), opts.before.filter(|b| *b > 0))],
        };
        // Overlapping ranges never repeat a message; the page is newest first and at most `limit` long.
        let msgs = self.svc.messages(self.tenant()).page(stored, me, windows, limit).await?;
        let count = msgs.len();
        for m in msgs {
            let data = MsgData {
                topic: wire.to_owned(),
                from: Some(m.from.to_string()),
                ts: Timestamp(m.created),
                seq: m.seq,
                head: m.head,
                content: m.content,
            };
            self.send(render::frame(&ServerMsg::Data(data))).await;
        }
        if count == 0 {
            self.reply(id, Some(wire), Code::NoContent, Some(json!({ "what": "data" }))).await;
        } else {
            self.reply(id, Some(wire), Code::Delivered, Some(json!({ "what": "data", "count": count }))).await;
        }
        Ok(())
    }

    async fn get_del(
        &self,
        id: Option<&str>,
        stored: &str,
        wire: &str,
        sub: Option<&Subscription>,
    ) -> ServiceResult<()> {
        let me = self.me()?;
        if sub.is_none() {
            return Err(ServiceError::PermissionDenied);
        }
        let dels = self.svc.messages(self.tenant()).deletions(stored, me).await?;
        if dels.ranges.is_empty() {
            self.reply(id, Some(wire), Code::NoContent, Some(json!({ "what": "del" }))).await;
            return Ok(());
        }
        let mut meta = MsgMeta::new(id, wire, Timestamp(now_millis()));
        meta.del = Some(DelValues {
            clear: dels.clear,
            delseq: dels
                .ranges
                .iter()
                .map(|r| SeqRange { low: r.low, hi: (r.hi > r.low.saturating_add(1)).then_some(r.hi) })
                .collect(),
        });
        self.send_meta(meta).await;
        Ok(())
    }

    async fn get_tags(
        &self,
        id: Option<&str>,
        wire: &str,
        kind: TopicKind,
        topic: Option<&Topic>,
    ) -> ServiceResult<()> {
        let me = self.me()?;
        let tags = match (kind, topic) {
            (TopicKind::Me, _) => self.svc.accounts(self.tenant()).user(me).await?.map(|u| u.tags).unwrap_or_default(),
            (TopicKind::Group, Some(t)) => t.tags.clone(),
            _ => Vec::new(),
        };
        if tags.is_empty() {
            self.reply(id, Some(wire), Code::NoContent, Some(json!({ "what": "tags" }))).await;
        } else {
            let mut meta = MsgMeta::new(id, wire, Timestamp(now_millis()));
            meta.tags = Some(tags);
            self.send_meta(meta).await;
        }
        Ok(())
    }

    pub(crate) async fn on_set(&mut self, m: MsgSet) -> ServiceResult<()> {
        let me = self.me()?;
        let tenant = self.tenant();
        let id = m.id.as_deref();
        let q = m.query;
        let resolved = resolve(&m.topic, me).ok_or(ServiceError::TopicNotFound)?;
        if let Some(d) = q.desc.as_ref() {
            self.check_desc_size(d)?;
        }
        let mut changed = false;
        match resolved {
            Resolved::Me => {
                let tags = match q.tags.as_deref() {
                    Some(t) => Some(self.svc.credentials(tenant).client_tags(Some(me), self.validate_tags(t)?).await?),
                    None => None,
                };
                if let Some(cred) = q.cred.as_ref() {
                    self.set_credential(me, cred).await?;
                    changed = true;
                }
                let desc = q.desc.unwrap_or_default();
                let defacs =
                    desc.defacs.as_ref().map(|d| self.parse_defacs(Some(d), DefaultAccess::USER)).transpose()?;
                if tags.is_some() || defacs.is_some() || desc.public.is_some() || desc.trusted.is_some() {
                    let update = UserUpdate {
                        updated: now_millis(),
                        public: desc.public.map(clear_marker),
                        trusted: None,
                        tags,
                        defacs,
                    };
                    let profile_changed = update.public.is_some();
                    self.svc.accounts(tenant).update_profile(me, &update).await?;
                    self.svc.files(tenant).adopt_avatar(me, update.public.as_ref()).await?;
                    if profile_changed {
                        self.svc.presence(tenant).announce_profile(me, self.user).await;
                    }
                    changed = true;
                }
            }
            Resolved::Fnd => {
                if let Some(q) = q.desc.as_ref().and_then(|d| d.public.as_ref()) {
                    self.fnd_query = parse_query(q);
                    changed = true;
                }
            }
            Resolved::Group(name) => changed = self.set_topic(me, &name, &m.topic, q).await?,
            Resolved::P2p { stored, .. } => changed = self.set_topic(me, &stored, &m.topic, q).await?,
            Resolved::NewGroup { .. } => return Err(ServiceError::TopicNotFound),
        }
        let code = if changed { Code::Ok } else { Code::NotModified };
        self.reply(id, Some(&m.topic), code, None).await;
        Ok(())
    }

    async fn set_topic(&self, me: UserId, stored: &str, wire: &str, q: palaver_proto::SetQuery) -> ServiceResult<bool> {
        let tenant = self.tenant();
        let subs = self.svc.subscriptions(tenant);
        let topic = self.svc.stored_topics(tenant).get(stored).await?;
        let mut sub = subs.get(stored, me).await?.ok_or(ServiceError::PermissionDenied)?;
        let is_owner = topic.owner == Some(me) || sub.mode().has(AccessMode::OWNER);
        let mut changed = false;
        let desc = q.desc.unwrap_or_default();
        let tags = q.tags.as_deref().map(|t| self.validate_tags(t)).transpose()?;
        let defacs = desc.defacs.as_ref().map(|d| self.parse_defacs(Some(d), topic.defacs)).transpose()?;
        let touches_topic = desc.public.is_some() || tags.is_some() || defacs.is_some();
        if touches_topic && (topic.kind != TopicKind::Group || !is_owner) {
            return Err(ServiceError::PermissionDenied);
        }
        if touches_topic {
            let update = TopicUpdate {
                updated: now_millis(),
                public: desc.public.map(clear_marker),
                trusted: None,
                tags,
                defacs,
                owner: None,
            };
            self.svc.stored_topics(tenant).update(me, stored, &update, self.handle.sid).await?;
            self.svc.files(tenant).adopt_avatar(me, update.public.as_ref()).await?;
            changed = true;
        }
        if let Some(private) = desc.private {
            // One column, on an active subscription only: a whole-row write from the read above could bring
            // back a subscription removed in the meantime.
            sub.private = Some(clear_marker(private)).filter(|v| !v.is_null());
            sub.updated = now_millis();
            subs.set_private(me, stored, sub.private.as_ref(), sub.updated).await?;
            changed = true;
        }
        if let Some(s) = q.sub {
            let target = match s.user.as_deref() {
                None | Some("") => me,
                Some(u) => UserId::parse(u).map_err(|_| ServiceError::Malformed("set.sub.user".into()))?,
            };
            let mode = s.mode.unwrap_or_default();
            changed |= subs.change_mode(&topic, &sub, target, &mode, wire).await?;
        }
        Ok(changed)
    }
}
