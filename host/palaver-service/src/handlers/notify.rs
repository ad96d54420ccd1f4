//! Notifications a change produces for other sessions: `{pres}` on `me` (on/off, acs, gone, msg, read) and the
//! bookkeeping that keeps the in-process member lists in step with subscriptions.

use crate::session::Session;
use palaver_core::{AccessMode, SessionId, UserId};
use palaver_proto::{AccessDelta, MsgPres};

impl Session {
    /// Pushes a `{pres}` on `me` to every session of `user` attached to `me`, except `skip`.
    pub(crate) fn push_me_pres(&self, user: UserId, pres: MsgPres, skip: Option<SessionId>) {
        self.svc.push_me_pres(self.tenant(), user, pres, skip);
    }

    /// Tells the user's P2P contacts that the user came online or went offline.
    pub(crate) async fn announce_presence(&self, user: UserId, online: bool) {
        let subs = match self.svc.ports.subs.list_user_subs(self.tenant(), user).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "cannot list contacts for presence");
                return;
            }
        };
        let ua = self.hello.as_ref().and_then(|h| h.ua.clone());
        for sub in subs.iter().filter(|s| s.topic.starts_with("p2p") && s.mode().has(AccessMode::PRES)) {
            let Some(peer) = palaver_core::p2p_peer(&sub.topic, user) else { continue };
            let pres = MsgPres {
                topic: "me".into(),
                src: Some(user.to_string()),
                what: if online { "on" } else { "off" }.into(),
                ua: if online { ua.clone() } else { None },
                ..MsgPres::default()
            };
            self.push_me_pres(peer, pres, None);
        }
    }

    /// Tells the user's P2P contacts that the user's profile changed.
    pub(crate) async fn announce_profile(&self, user: UserId) {
        let Ok(subs) = self.svc.ports.subs.list_user_subs(self.tenant(), user).await else { return };
        for sub in subs.iter().filter(|s| s.topic.starts_with("p2p")) {
            let Some(peer) = palaver_core::p2p_peer(&sub.topic, user) else { continue };
            let pres =
                MsgPres { topic: "me".into(), src: Some(user.to_string()), what: "upd".into(), ..MsgPres::default() };
            self.push_me_pres(peer, pres, None);
        }
    }

    /// Tells every member of a group that its description changed.
    pub(crate) async fn announce_topic_update(&self, stored: &str) {
        let Ok(subs) = self.svc.ports.subs.list_topic_subs(self.tenant(), stored).await else { return };
        for sub in subs {
            let pres =
                MsgPres { topic: "me".into(), src: Some(stored.to_owned()), what: "upd".into(), ..MsgPres::default() };
            self.push_me_pres(sub.user, pres, Some(self.handle.sid));
        }
    }

    /// Tells `user` that their access to `wire` changed.
    pub(crate) async fn notify_acs(&self, user: UserId, wire: &str, want: AccessMode, given: AccessMode) {
        let pres = MsgPres {
            topic: "me".into(),
            src: Some(wire.to_owned()),
            what: "acs".into(),
            dacs: Some(AccessDelta { want: want.to_string(), given: given.to_string() }),
            act: self.user.map(|u| u.to_string()),
            ..MsgPres::default()
        };
        self.push_me_pres(user, pres, None);
    }

    /// Tells `user`'s sessions that a topic is gone for them.
    pub(crate) async fn notify_gone(&self, user: UserId, wire: &str, skip: Option<SessionId>) {
        let pres =
            MsgPres { topic: "me".into(), src: Some(wire.to_owned()), what: "gone".into(), ..MsgPres::default() };
        self.push_me_pres(user, pres, skip);
    }

    /// Detaches every session of `user` from a topic and tells each of them it was evicted
    /// (`{ctrl 205 "evicted" params.unsub}`), which is what makes `tinode-sdk` mark the topic detached.
    pub(crate) fn evict(&self, user: UserId, stored: &str, skip: Option<SessionId>) {
        let wire = crate::topics::wire_name(stored, user);
        let frame = crate::render::ctrl_frame(
            None,
            Some(&wire),
            palaver_proto::Code::Evicted,
            crate::now_millis(),
            Some(serde_json::json!({ "unsub": true })),
        );
        for s in self.svc.hub.detach_user(self.tenant(), stored, user) {
            if Some(s.sid) != skip {
                s.push(frame.clone());
            }
        }
    }

    /// Drops the cached member list of a topic after a subscription changed.
    pub(crate) async fn members_changed(&self, stored: &str) {
        let lock = self.svc.topics.get(self.tenant(), stored);
        lock.lock().await.members = None;
    }
}
