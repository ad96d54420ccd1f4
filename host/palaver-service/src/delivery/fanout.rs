//! Delivery of stored messages and notifications to this node's sessions: the fanout of `{data}`, `{pres}` on
//! `me`, and the cached member lists fanout consults. Shared by sessions and by node-level calls (releasing a
//! held message), so it hangs off the service's inner state rather than a session.

use crate::error::ServiceResult;
use crate::names::wire_name;
use crate::render;
use crate::{Frame, Inner};
use palaver_core::{AccessMode, Message, SessionId, StoreResult, TenantId, UserId};
use palaver_proto::{MsgData, MsgPres, ServerMsg, Timestamp};
use std::collections::HashMap;
use std::sync::Arc;

impl Inner {
    /// Queues `{data}` to every attached reader except `skip`, without waiting. Called under the topic's write
    /// lock, so that every session receives a topic's messages in seq order.
    pub(crate) fn deliver_attached(&self, tenant: TenantId, msg: &Message, skip: Option<SessionId>) {
        let from = msg.from.to_string();
        let p2p = msg.topic.starts_with("p2p");
        // A group message is serialised once. A P2P message has one wire name per side, so at most two.
        let mut frames: HashMap<UserId, Frame> = HashMap::new();
        let group_frame = (!p2p).then(|| data_frame(msg, &msg.topic, &from));
        self.hub.for_each_attached(tenant, &msg.topic, |a| {
            if Some(a.session.sid) == skip || !a.mode.has(AccessMode::READ) {
                return;
            }
            let frame = match &group_frame {
                Some(f) => f.clone(),
                None => frames
                    .entry(a.user)
                    .or_insert_with(|| data_frame(msg, &wire_name(&msg.topic, a.user), &from))
                    .clone(),
            };
            a.session.push(frame);
        });
    }

    /// `{pres what:"msg"}` on `me` for subscribers who are online but not attached to the topic.
    pub(crate) async fn notify_unattached(&self, tenant: TenantId, msg: &Message) {
        let members = match self.members(tenant, &msg.topic).await {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e, "member list unavailable");
                return;
            }
        };
        let attached = self.hub.attached_users(tenant, &msg.topic);
        for user in members.iter().filter(|u| attached.binary_search(u).is_err()) {
            let pres = MsgPres {
                topic: "me".into(),
                src: Some(wire_name(&msg.topic, *user)),
                what: "msg".into(),
                seq: Some(msg.seq),
                act: Some(msg.from.to_string()),
                ..MsgPres::default()
            };
            self.push_me_pres(tenant, *user, pres, None);
        }
    }

    /// The topic's readers, from the in-process cache or the store.
    pub(crate) async fn members(&self, tenant: TenantId, stored: &str) -> ServiceResult<Vec<UserId>> {
        let topic = self.topics.get(tenant, stored);
        let now = crate::now_millis();
        let generation = match topic.cached(|c| &mut c.members, |at| self.members_fresh(now, at)) {
            Ok(members) => return Ok(members),
            Err(generation) => generation,
        };
        let subs = self.subscribers(tenant, stored).await?;
        let members: Vec<UserId> =
            subs.iter().filter(|(_, mode)| mode.has(AccessMode::READ)).map(|(u, _)| *u).collect();
        topic.store(|c| &mut c.members, generation, members.clone(), now);
        Ok(members)
    }

    /// The topic's subscribers with their effective modes, from the in-process cache or the store.
    pub(crate) async fn subscribers(
        &self,
        tenant: TenantId,
        stored: &str,
    ) -> StoreResult<Arc<Vec<(UserId, AccessMode)>>> {
        let topic = self.topics.get(tenant, stored);
        let now = crate::now_millis();
        let generation = match topic.cached(|c| &mut c.subscribers, |at| self.members_fresh(now, at)) {
            Ok(subs) => return Ok(subs),
            Err(generation) => generation,
        };
        let subs = self.ports.subs.list_topic_subs(tenant, stored).await?;
        let subs = Arc::new(subs.iter().map(|s| (s.user, s.mode())).collect::<Vec<_>>());
        topic.store(|c| &mut c.subscribers, generation, subs.clone(), now);
        Ok(subs)
    }

    /// Whether a member list cached at `at` may still be used at `now`. With other nodes, a change made there
    /// reaches this cache through the bus only if this node had online members of the topic at the time; the
    /// age limit bounds how long a missed change can linger. Alone, every change goes through this process.
    fn members_fresh(&self, now: i64, at: i64) -> bool {
        !self.ports.bus.is_shared() || now - at < SHARED_MEMBERS_MAX_AGE_MS
    }

    /// Pushes a `{pres}` on `me` to every session of `user` attached to `me`, except `skip`.
    pub(crate) fn push_me_pres(&self, tenant: TenantId, user: UserId, pres: MsgPres, skip: Option<SessionId>) {
        let frame = render::frame(&ServerMsg::Pres(pres));
        self.hub.for_each_user_session(tenant, user, |s| {
            if s.on_me() && Some(s.sid) != skip {
                s.push(frame.clone());
            }
        });
    }
}

/// How long a cached member list is trusted when other nodes may change it.
pub(crate) const SHARED_MEMBERS_MAX_AGE_MS: i64 = 10_000;

/// A `{data}` frame for `msg` as seen under `wire` name.
fn data_frame(msg: &Message, wire: &str, from: &str) -> Frame {
    render::frame(&ServerMsg::Data(MsgData {
        topic: wire.to_owned(),
        from: Some(from.to_owned()),
        ts: Timestamp(msg.created),
        seq: msg.seq,
        head: msg.head.clone(),
        content: msg.content.clone(),
    }))
}
