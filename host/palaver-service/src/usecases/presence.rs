//! Presence: a session's online record (shared with the other nodes), the user's last seen when it closes, and
//! the `{pres}` on `me` its contacts get when the user comes and goes or changes their profile.

use crate::Inner;
use crate::delivery::hub::SessionHandle;
use palaver_core::{AccessMode, PresenceMeta, TenantId, UnixMillis, UserId};
use palaver_proto::MsgPres;
use std::sync::Arc;

/// The presence use cases of one tenant.
pub(crate) struct Presence<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Presence<'_> {
    /// Records the session `sid` of `user` as online (a failure only costs the shared view, never the login).
    pub(crate) async fn mark_online(&self, user: UserId, sid: &str, meta: &PresenceMeta) {
        if let Err(e) = self.svc.ports.presence.mark_online(self.tenant, user, sid, meta).await {
            tracing::debug!(error = %e, "presence online failed");
        }
    }

    /// Refreshes the session's online record and, at the same time, checks it against the control versions, so
    /// that a control the bus lost still closes it.
    pub(crate) async fn refresh(&self, session: &Arc<SessionHandle>, user: UserId, sid: &str, now: UnixMillis) {
        let (refreshed, ()) = tokio::join!(
            self.svc.ports.presence.refresh(self.tenant, user, sid, now),
            self.svc.check_control(session, user),
        );
        if let Err(e) = refreshed {
            tracing::debug!(error = %e, "presence refresh failed");
        }
    }

    /// A session of `user` closed: its online record goes, the user's last seen (and user agent) is stored, and
    /// the user's topics stop reaching this node once it has no session of the user left. Returns how many
    /// sessions of the user remain online anywhere (this node's count when the shared view cannot answer).
    pub(crate) async fn session_closed(&self, user: UserId, sid: &str, ua: Option<&str>, now: UnixMillis) -> usize {
        let tenant = self.tenant;
        let remaining = match self.svc.ports.presence.mark_offline(tenant, user, sid, now).await {
            Ok(n) => n as usize,
            Err(e) => {
                tracing::debug!(error = %e, "presence offline failed");
                self.svc.hub.user_session_count(tenant, user)
            }
        };
        if let Err(e) = self.svc.ports.users.touch_user(tenant, user, now, ua).await {
            tracing::debug!(error = %e, "last-seen update failed");
        }
        if self.svc.hub.user_session_count(tenant, user) == 0 {
            self.svc.leave_online_all(tenant, user).await;
        }
        remaining
    }

    /// At shutdown, a session whose client never answered the close leaves the shared presence, so that other
    /// nodes do not show it online until the presence TTL.
    pub(crate) async fn release(&self, user: UserId, sid: &str, now: UnixMillis) {
        if let Err(e) = self.svc.ports.presence.mark_offline(self.tenant, user, sid, now).await {
            tracing::debug!(error = %e, "presence not released");
        }
        self.svc.leave_online_all(self.tenant, user).await;
    }

    /// Whether `user` is online anywhere: `None` when the shared view cannot tell.
    pub(crate) async fn is_online(&self, user: UserId) -> Option<bool> {
        match self.svc.ports.presence.get_presence(self.tenant, user).await {
            palaver_core::Presence::Online { .. } => Some(true),
            palaver_core::Presence::Offline { .. } => Some(false),
            palaver_core::Presence::Unknown => None,
        }
    }

    /// Tells the user's P2P contacts who may see it (P) that the user came online (with `ua`) or went offline.
    pub(crate) async fn announce(&self, user: UserId, online: bool, ua: Option<String>, from: Option<UserId>) {
        let subs = match self.svc.ports.subs.list_user_subs(self.tenant, user).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "cannot list contacts for presence");
                return;
            }
        };
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
        self.svc.pres_to_many(self.tenant, peers, pres, None, from).await;
    }

    /// Tells the user's P2P contacts that the user's profile changed.
    pub(crate) async fn announce_profile(&self, user: UserId, from: Option<UserId>) {
        let Ok(subs) = self.svc.ports.subs.list_user_subs(self.tenant, user).await else { return };
        let peers: Vec<UserId> = subs
            .iter()
            .filter(|s| s.topic.starts_with("p2p"))
            .filter_map(|s| palaver_core::p2p_peer(&s.topic, user))
            .collect();
        let pres =
            MsgPres { topic: "me".into(), src: Some(user.to_string()), what: "upd".into(), ..MsgPres::default() };
        self.svc.pres_to_many(self.tenant, peers, pres, None, from).await;
    }
}
