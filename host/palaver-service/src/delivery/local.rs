//! What each [`Event`] does to this node's sessions, whichever node it came from, and the bookkeeping that
//! lets other nodes route events here: the online-member lists of the topics of users with sessions here.

use crate::delivery::event::{BusinessTarget, Event};
use crate::names::wire_name;
use crate::{Inner, now_millis, render};
use palaver_core::ports::SessionBeat;
use palaver_core::{AccessMode, SessionId, TenantId, UserId};
use palaver_proto::{Code, MsgInfo, MsgPres, ServerMsg};
use serde_json::{Value, json};
use std::collections::HashMap;

impl Inner {
    /// Applies an event to this node's sessions, skipping `skip` (a session of this node).
    pub(crate) async fn apply(&self, tenant: TenantId, event: Event, skip: Option<SessionId>) {
        match event {
            Event::Data { msg } => {
                let msg = msg.into_message();
                self.deliver_attached(tenant, &msg, skip);
                self.notify_unattached(tenant, &msg).await;
            }
            Event::Info { topic, from, what, seq, event, payload } => {
                self.relay_info(tenant, &topic, from, &what, seq, event, payload, skip);
            }
            Event::MePres { users, pres } => {
                for user in users {
                    self.push_me_pres(tenant, user, pres.clone(), skip);
                }
            }
            Event::Deleted { topic, by, hard, clear, delseq } => {
                self.hub.for_each_attached(tenant, &topic, |a| {
                    if Some(a.session.sid) != skip && (hard || a.user == by) {
                        a.session.push(render::frame(&ServerMsg::Pres(MsgPres {
                            topic: wire_name(&topic, a.user),
                            what: "del".into(),
                            clear: Some(clear),
                            delseq: Some(delseq.clone()),
                            ..MsgPres::default()
                        })));
                    }
                });
            }
            Event::Evict { topic, user } => {
                let wire = wire_name(&topic, user);
                let frame = render::ctrl_frame(
                    None,
                    Some(&wire),
                    Code::Evicted,
                    None,
                    now_millis(),
                    Some(json!({ "unsub": true })),
                );
                for s in self.hub.detach_user(tenant, &topic, user) {
                    if Some(s.sid) != skip {
                        s.push(frame.clone());
                    }
                }
                self.drop_members(tenant, &topic).await;
            }
            Event::TopicGone { topic } => {
                let frame = render::ctrl_frame(
                    None,
                    Some(&topic),
                    Code::Evicted,
                    None,
                    now_millis(),
                    Some(json!({ "unsub": true })),
                );
                for a in self.hub.detach_all(tenant, &topic) {
                    if Some(a.session.sid) != skip {
                        a.session.push(frame.clone());
                    }
                }
                self.topics.forget(tenant, &topic);
            }
            Event::Access { topic, user, mode } => {
                self.hub.set_mode(tenant, &topic, user, mode);
                self.drop_members(tenant, &topic).await;
            }
            Event::MembersChanged { topic } => self.drop_members(tenant, &topic).await,
            Event::Joined { topic, user } => {
                if self.hub.user_session_count(tenant, user) > 0 {
                    self.join_online(tenant, user, vec![topic]).await;
                }
            }
            Event::Business { to, event, payload, from } => {
                self.deliver_business(tenant, &to, &event, &payload, from);
            }
            Event::Call { topic, to, session, except, from, seq, event, payload } => {
                // Tinode's routing. The signalling between the two sessions in the call (ringing, the caller's
                // accept, offer, answer, ICE: `session` names one) goes on the P2P topic as its user names it,
                // where the clients' call panels listen. An invite, and an accept to the other devices, go on
                // `me` with `src` naming the topic (an incoming call; a call taken elsewhere). A hang-up goes on
                // the topic to the sessions attached to it and on `me` to the others.
                let mut attached = std::collections::HashSet::new();
                if event == "hang-up" {
                    self.hub.for_each_attached(tenant, &topic, |a| {
                        attached.insert(a.session.sid);
                    });
                }
                let direct = session.is_some();
                let info = |user: UserId, on_topic: bool| {
                    let name = wire_name(&topic, user);
                    let (topic, src) = if on_topic { (name, None) } else { ("me".to_owned(), Some(name)) };
                    let info = MsgInfo {
                        topic,
                        src,
                        from: from.to_string(),
                        what: "call".into(),
                        seq: Some(seq),
                        event: Some(event.clone()),
                        payload: payload.clone(),
                    };
                    render::frame(&ServerMsg::Info(info))
                };
                for user in to {
                    let frames = [info(user, false), info(user, true)];
                    self.hub.for_each_user_session(tenant, user, |s| {
                        let named = |k: &String| *k == format!("{}/{}", self.cfg.node_id, s.sid);
                        let excepted = except.as_ref().is_some_and(named);
                        if Some(s.sid) != skip && !excepted && session.as_ref().is_none_or(named) {
                            s.push(frames[usize::from(direct || attached.contains(&s.sid))].clone());
                        }
                    });
                }
            }
            Event::Control { user, scope, version, reason, except } => {
                self.apply_control(tenant, user, &scope, version, &reason, except.as_deref());
            }
        }
    }

    /// `{info}` to the readers attached to `topic` except `skip`; for `recv` and `read`, also `{pres}` on `me`
    /// to the author's sessions here that are not attached, so unread counters agree on every device.
    #[allow(clippy::too_many_arguments)]
    fn relay_info(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        what: &str,
        seq: Option<i64>,
        event: Option<String>,
        payload: Option<Value>,
        skip: Option<SessionId>,
    ) {
        let from_s = from.to_string();
        let mut frames: HashMap<UserId, crate::Frame> = HashMap::new();
        let mut reached = Vec::new();
        self.hub.for_each_attached(tenant, topic, |a| {
            if Some(a.session.sid) == skip || !a.mode.has(AccessMode::READ) {
                return;
            }
            let frame = frames
                .entry(a.user)
                .or_insert_with(|| {
                    render::frame(&ServerMsg::Info(MsgInfo {
                        topic: wire_name(topic, a.user),
                        from: from_s.clone(),
                        what: what.to_owned(),
                        seq,
                        event: event.clone(),
                        payload: payload.clone(),
                        src: None,
                    }))
                })
                .clone();
            a.session.push(frame);
            reached.push(a.session.sid);
        });
        if let (Some(seq), "read" | "recv") = (seq, what) {
            let pres = MsgPres {
                topic: "me".into(),
                src: Some(wire_name(topic, from)),
                what: what.to_owned(),
                seq: Some(seq),
                ..MsgPres::default()
            };
            let frame = render::frame(&ServerMsg::Pres(pres));
            self.hub.for_each_user_session(tenant, from, |s| {
                if Some(s.sid) != skip && s.on_me() && !reached.contains(&s.sid) {
                    s.push(frame.clone());
                }
            });
        }
    }

    /// A business event to this node's sessions in the business `{info}` form. Returns how many it reached.
    pub(crate) fn deliver_business(
        &self,
        tenant: TenantId,
        to: &BusinessTarget,
        event: &str,
        payload: &Value,
        from: Option<UserId>,
    ) -> usize {
        let from = from.map_or_else(|| "sys".to_owned(), |u| u.to_string());
        let info = |topic: String, what: &str| MsgInfo {
            topic,
            src: None,
            from: from.clone(),
            what: what.into(),
            seq: None,
            event: Some(event.to_owned()),
            payload: Some(payload.clone()),
        };
        let mut reached = 0;
        match to {
            BusinessTarget::User(user) => {
                let frame = render::frame(&ServerMsg::Info(info("me".into(), "im")));
                self.hub.for_each_user_session(tenant, *user, |s| reached += usize::from(s.push(frame.clone())));
            }
            BusinessTarget::Topic(topic) => {
                let mut frames = HashMap::new();
                self.hub.for_each_attached(tenant, topic, |a| {
                    let frame = frames
                        .entry(a.user)
                        .or_insert_with(|| render::frame(&ServerMsg::Info(info(wire_name(topic, a.user), "group"))))
                        .clone();
                    reached += usize::from(a.session.push(frame));
                });
            }
        }
        reached
    }

    /// Drops the cached member list of a topic.
    pub(crate) async fn drop_members(&self, tenant: TenantId, topic: &str) {
        self.topics.invalidate(tenant, topic);
    }

    /// Lists the user as an online member of `topics` in the shared presence, once per node.
    pub(crate) async fn join_online(&self, tenant: TenantId, user: UserId, topics: Vec<String>) {
        if !self.ports.bus.is_shared() {
            return;
        }
        let new = self.hub.mark_joined(tenant, user, topics);
        if !new.is_empty()
            && let Err(e) = self.ports.presence.join_topics(tenant, user, &new).await
        {
            tracing::debug!(error = %e, "online members not joined");
        }
    }

    /// Takes the user off the online members of one topic (they unsubscribed).
    pub(crate) async fn leave_online(&self, tenant: TenantId, user: UserId, topic: &str) {
        if self.hub.unmark_joined(tenant, user, topic)
            && let Err(e) = self.ports.presence.leave_topics(tenant, user, &[topic.to_owned()]).await
        {
            tracing::debug!(error = %e, "online members not left");
        }
    }

    /// Takes the user off every topic's online members of this node (their last session here closed).
    pub(crate) async fn leave_online_all(&self, tenant: TenantId, user: UserId) {
        let topics = self.hub.take_joined(tenant, user);
        if !topics.is_empty()
            && let Err(e) = self.ports.presence.leave_topics(tenant, user, &topics).await
        {
            tracing::debug!(error = %e, "online members not left");
        }
    }

    /// Lists a freshly logged-in user under every topic they read, so that events of those topics reach here.
    pub(crate) async fn join_user_topics(&self, tenant: TenantId, user: UserId) {
        if !self.ports.bus.is_shared() {
            return;
        }
        match self.ports.subs.list_user_subs(tenant, user).await {
            Ok(subs) => {
                let topics = subs.into_iter().filter(|s| s.mode().has(AccessMode::READ)).map(|s| s.topic).collect();
                self.join_online(tenant, user, topics).await;
            }
            Err(e) => tracing::debug!(error = %e, "cannot list topics to join"),
        }
    }
}

impl crate::Service {
    /// The node heartbeat: refreshes the shared presence of every session and online-member list of this node
    /// (so idle connections stay online and a crashed node's expire), and checks every session against the
    /// control versions (so a control the bus lost still takes effect within one heartbeat).
    pub async fn heartbeat(&self) {
        let inner = &self.inner;
        let sessions: Vec<_> = inner.hub.all_sessions().into_iter().filter(|s| s.user().is_some()).collect();
        let beats: Vec<SessionBeat> = sessions
            .iter()
            .filter_map(|s| Some(SessionBeat { tenant: s.tenant, user: s.user()?, session: s.sid.to_string() }))
            .collect();
        if let Err(e) = inner.ports.presence.heartbeat(&beats, &inner.hub.joined_topics()).await {
            inner.metrics.heartbeat_failed("presence");
            tracing::debug!(error = %e, "presence heartbeat failed");
        }
        for s in &sessions {
            if let Some(user) = s.user() {
                inner.check_control(s, user).await;
            }
        }
    }
}
