//! Notifications a change produces for other sessions: `{pres}` on `me` (on/off, acs, gone, msg, read) and the
//! bookkeeping that keeps the in-process member lists in step with subscriptions.

use crate::Inner;
use crate::realtime::Event;
use crate::session::Session;
use palaver_core::{AccessMode, SessionId, TenantId, UserId};
use palaver_proto::{AccessDelta, MsgPres};

impl Session {
    /// The same `{pres}` on `me` to several users, as one event.
    pub(crate) async fn push_me_pres_many(&self, users: Vec<UserId>, pres: MsgPres, skip: Option<SessionId>) {
        if users.is_empty() {
            return;
        }
        self.svc.dispatch(self.tenant(), Event::MePres { users, pres }, skip, self.user).await;
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
        let peers: Vec<UserId> = subs
            .iter()
            .filter(|s| s.topic.starts_with("p2p") && s.mode().has(AccessMode::PRES))
            .filter_map(|s| palaver_core::p2p_peer(&s.topic, user))
            .collect();
        let pres = MsgPres {
            topic: "me".into(),
            src: Some(user.to_string()),
            what: if online { "on" } else { "off" }.into(),
            ua: if online { ua } else { None },
            ..MsgPres::default()
        };
        self.push_me_pres_many(peers, pres, None).await;
    }

    /// Tells the user's P2P contacts that the user's profile changed.
    pub(crate) async fn announce_profile(&self, user: UserId) {
        let Ok(subs) = self.svc.ports.subs.list_user_subs(self.tenant(), user).await else { return };
        let peers: Vec<UserId> = subs
            .iter()
            .filter(|s| s.topic.starts_with("p2p"))
            .filter_map(|s| palaver_core::p2p_peer(&s.topic, user))
            .collect();
        let pres =
            MsgPres { topic: "me".into(), src: Some(user.to_string()), what: "upd".into(), ..MsgPres::default() };
        self.push_me_pres_many(peers, pres, None).await;
    }

    /// Tells every member of a group that its description changed.
    pub(crate) async fn announce_topic_update(&self, stored: &str) {
        let Ok(subs) = self.svc.ports.subs.list_topic_subs(self.tenant(), stored).await else { return };
        let users = subs.into_iter().map(|s| s.user).collect();
        let pres =
            MsgPres { topic: "me".into(), src: Some(stored.to_owned()), what: "upd".into(), ..MsgPres::default() };
        self.push_me_pres_many(users, pres, Some(self.handle.sid)).await;
    }

    /// Tells `user` that their access to `wire` changed.
    pub(crate) async fn notify_acs(&self, user: UserId, wire: &str, want: AccessMode, given: AccessMode) {
        self.svc.notify_acs(self.tenant(), user, wire, (want, given), self.user).await;
    }

    /// Tells `user`'s sessions that a topic is gone for them.
    pub(crate) async fn notify_gone(&self, user: UserId, wire: &str, skip: Option<SessionId>) {
        self.svc.notify_gone(self.tenant(), user, wire, skip, self.user).await;
    }

    /// Detaches every session of `user` from a topic, on every node (see [`Inner::evict`]).
    pub(crate) async fn evict(&self, user: UserId, stored: &str, skip: Option<SessionId>) {
        self.svc.evict(self.tenant(), user, stored, skip, self.user).await;
    }

    /// Drops the cached member list of a topic after a subscription changed, on every node.
    pub(crate) async fn members_changed(&self, stored: &str) {
        self.svc.members_changed(self.tenant(), stored, self.user).await;
    }
}

/// The same notifications for callers without a session (the business commands), `from` being the actor.
impl Inner {
    /// Tells `user` that their access to `wire` changed to `(want, given)`.
    pub(crate) async fn notify_acs(
        &self,
        tenant: TenantId,
        user: UserId,
        wire: &str,
        (want, given): (AccessMode, AccessMode),
        from: Option<UserId>,
    ) {
        let pres = MsgPres {
            topic: "me".into(),
            src: Some(wire.to_owned()),
            what: "acs".into(),
            dacs: Some(AccessDelta { want: want.to_string(), given: given.to_string() }),
            act: from.map(|u| u.to_string()),
            ..MsgPres::default()
        };
        self.dispatch(tenant, Event::MePres { users: vec![user], pres }, None, from).await;
    }

    /// Tells `user`'s sessions that a topic is gone for them.
    pub(crate) async fn notify_gone(
        &self,
        tenant: TenantId,
        user: UserId,
        wire: &str,
        skip: Option<SessionId>,
        from: Option<UserId>,
    ) {
        let pres =
            MsgPres { topic: "me".into(), src: Some(wire.to_owned()), what: "gone".into(), ..MsgPres::default() };
        self.dispatch(tenant, Event::MePres { users: vec![user], pres }, skip, from).await;
    }

    /// Detaches every session of `user` from a topic, on every node, and tells each of them it was evicted
    /// (`{ctrl 205 "evicted" params.unsub}`), which is what makes `tinode-sdk` mark the topic detached.
    pub(crate) async fn evict(
        &self,
        tenant: TenantId,
        user: UserId,
        stored: &str,
        skip: Option<SessionId>,
        from: Option<UserId>,
    ) {
        self.dispatch(tenant, Event::Evict { topic: stored.to_owned(), user }, skip, from).await;
    }

    /// Drops the cached member list (and what sits beside it) of a topic, on every node.
    pub(crate) async fn members_changed(&self, tenant: TenantId, stored: &str, from: Option<UserId>) {
        self.dispatch(tenant, Event::MembersChanged { topic: stored.to_owned() }, None, from).await;
    }
}
