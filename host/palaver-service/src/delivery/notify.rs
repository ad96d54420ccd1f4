//! The `{pres}` on `me` and membership events a change sends, for sessions and business commands alike (`from`
//! being the actor): access changed, topic gone, evicted, member list dropped. An access change or a topic gone
//! that someone else made also hands the user's devices a silent `sub` push (only a buffer is written).

use crate::Inner;
use crate::delivery::event::Event;
use palaver_core::{AccessMode, SessionId, TenantId, UserId};
use palaver_proto::{AccessDelta, MsgPres};

impl Inner {
    /// The same `{pres}` on `me` to several users, as one event (nothing when there is nobody to tell).
    pub(crate) async fn pres_to_many(
        &self,
        tenant: TenantId,
        users: Vec<UserId>,
        pres: MsgPres,
        skip: Option<SessionId>,
        from: Option<UserId>,
    ) {
        if users.is_empty() {
            return;
        }
        self.dispatch(tenant, Event::MePres { users, pres }, skip, from).await;
    }

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
        self.enqueue_sub(tenant, user, wire, from);
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
        self.enqueue_sub(tenant, user, wire, from);
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
