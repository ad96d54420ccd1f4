//! Stored topics: creating a group under a fresh name, opening a P2P conversation on the peer's terms, what a
//! reader may see of a topic, changing a group's description, and deleting a group.

use crate::backbone::Summary;
use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use palaver_core::{
    AccessMode, DefaultAccess, RecordState, SessionId, StoreError, Subscription, TenantId, Topic, TopicKind,
    TopicUpdate, User, UserId,
};
use serde_json::{Value, json};

/// The topic use cases of one tenant.
pub(crate) struct Topics<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

/// What a new group starts with.
pub(crate) struct NewGroup {
    pub(crate) defacs: DefaultAccess,
    pub(crate) tags: Vec<String>,
    pub(crate) public: Option<Value>,
    pub(crate) private: Option<Value>,
}

impl Topics<'_> {
    /// The stored topic `name`, or `TopicNotFound`.
    pub(crate) async fn get(&self, name: &str) -> ServiceResult<Topic> {
        self.svc.ports.topics.get_topic(self.tenant, name).await?.ok_or(ServiceError::TopicNotFound)
    }

    /// The stored topic `name`, if any.
    pub(crate) async fn find(&self, name: &str) -> ServiceResult<Option<Topic>> {
        Ok(self.svc.ports.topics.get_topic(self.tenant, name).await?)
    }

    /// Groups whose tags match the `fnd` query, at most `limit`.
    pub(crate) async fn find_by_tags(&self, tags: &[String], limit: usize) -> ServiceResult<Vec<Topic>> {
        Ok(self.svc.ports.topics.find_topics_by_tags(self.tenant, tags, limit).await?)
    }

    /// Users whose tags match the `fnd` query, at most `limit`.
    pub(crate) async fn find_users_by_tags(&self, tags: &[String], limit: usize) -> ServiceResult<Vec<User>> {
        Ok(self.svc.ports.users.find_users_by_tags(self.tenant, tags, limit).await?)
    }

    /// The topic and `me`'s subscription to it, for a `{get}` of `parts`. Tinode's visibility: a P2P topic
    /// exists only for its two users; a stranger (or a member whose access was taken away) may read a group's
    /// public description and nothing else: not its members, their read positions and modes, its tags, history
    /// or deletions.
    pub(crate) async fn visible_to(
        &self,
        stored: &str,
        me: UserId,
        kind: TopicKind,
        parts: &[&str],
        known: &[&str],
    ) -> ServiceResult<(Topic, Option<Subscription>)> {
        let tenant = self.tenant;
        let topic = self.svc.ports.topics.get_topic(tenant, stored).await?.ok_or(ServiceError::TopicNotFound)?;
        let sub = self.svc.ports.subs.get_sub(tenant, stored, me).await?;
        if sub.is_none() && kind == TopicKind::P2p {
            return Err(ServiceError::TopicNotFound);
        }
        let member = sub.as_ref().is_some_and(|s| s.mode().has(AccessMode::JOIN));
        if !member && parts.iter().any(|w| *w != "desc" && known.contains(w)) {
            return Err(ServiceError::PermissionDenied);
        }
        Ok((topic, sub))
    }

    /// Creates a group owned by `me` under a random name (retried on the rare collision) with `me` as its
    /// owner-subscriber. The caller has checked `me`'s group count.
    pub(crate) async fn create_group(&self, me: UserId, new: NewGroup) -> ServiceResult<(String, Subscription)> {
        let NewGroup { defacs, tags, public, private } = new;
        let now = now_millis();
        let tenant = self.tenant;
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
                public: public.clone(),
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
                private: private.clone(),
            };
            self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
            self.svc.files(tenant).adopt_avatar(me, public.as_ref()).await?;
            let created = json!({ "owner": me.to_string(), "members": 1 });
            self.svc.summary(tenant, Summary::new("group.created", "topic", name.clone(), created)).await;
            return Ok((name, sub));
        }
        Err(ServiceError::Internal("could not allocate a group name".into()))
    }

    /// Opens (or reopens) the P2P conversation `stored` of `me` with `peer` and returns `me`'s subscription.
    /// An anonymous account (`anon`) is given what the peer's `anon` defaults grant.
    pub(crate) async fn open_p2p(
        &self,
        me: UserId,
        peer: UserId,
        stored: &str,
        anon: bool,
    ) -> ServiceResult<Subscription> {
        let tenant = self.tenant;
        let peer_user = self.svc.ports.users.get_user(tenant, peer).await?.ok_or(ServiceError::UserNotFound)?;
        if peer_user.state != RecordState::Active {
            return Err(ServiceError::UserNotFound);
        }
        let now = now_millis();
        let mine = self.svc.ports.subs.get_sub(tenant, stored, me).await?;
        // What the starter is given is what the peer's defaults grant strangers (Tinode's rule), so a user whose
        // defaults leave out W cannot be written to by whoever opens a conversation; without J there is no
        // conversation at all, and nothing is written or announced to the peer.
        let given = if anon { peer_user.defacs.anon } else { peer_user.defacs.auth }.and(AccessMode::P2P);
        if !mine.as_ref().map_or(given, Subscription::mode).has(AccessMode::JOIN) {
            return Err(ServiceError::PermissionDenied);
        }
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
        let theirs = self.svc.ports.subs.get_sub(tenant, stored, peer).await?;
        if theirs.is_none() {
            // The peer's side is granted what the peer's own defaults allow, limited to P2P bits.
            let given = AccessMode::P2P;
            let want = peer_user.defacs.auth.and(AccessMode::P2P);
            let sub = super::subscriptions::new_sub(stored, peer, want, given, now);
            self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
            let joined = crate::delivery::event::Event::Joined { topic: stored.to_owned(), user: peer };
            self.svc.dispatch(tenant, joined, None, Some(me)).await;
            self.svc.notify_acs(tenant, peer, &me.to_string(), (want, given), Some(me)).await;
        }
        let mine = match mine {
            Some(sub) => sub,
            None => {
                let sub = super::subscriptions::new_sub(stored, me, AccessMode::P2P, given, now);
                self.svc.ports.subs.upsert_sub(tenant, &sub).await?;
                sub
            }
        };
        self.svc.members_changed(tenant, stored, Some(me)).await;
        Ok(mine)
    }

    /// Changes a group's description, tags or default access (the caller checked that `me` owns it), and tells
    /// every member on `me` except the session `skip` that made the change.
    pub(crate) async fn update(
        &self,
        me: UserId,
        stored: &str,
        update: &TopicUpdate,
        skip: SessionId,
    ) -> ServiceResult<()> {
        self.svc.ports.topics.update_topic(self.tenant, stored, update).await?;
        let Ok(subs) = self.svc.ports.subs.list_topic_subs(self.tenant, stored).await else { return Ok(()) };
        let users = subs.into_iter().map(|s| s.user).collect();
        let pres = palaver_proto::MsgPres {
            topic: "me".into(),
            src: Some(stored.to_owned()),
            what: "upd".into(),
            ..palaver_proto::MsgPres::default()
        };
        self.svc.pres_to_many(self.tenant, users, pres, Some(skip), Some(me)).await;
        Ok(())
    }

    /// Deletes a group: only its owner may. Its messages, subscriptions and seq counter go; every node drops
    /// its attached readers (except the session `skip` that asked, which replies itself). Returns who were
    /// members, to be told on `me`.
    pub(crate) async fn delete_group(&self, me: UserId, topic: &Topic, skip: SessionId) -> ServiceResult<Vec<UserId>> {
        let tenant = self.tenant;
        let stored = topic.name.as_str();
        if topic.owner != Some(me) {
            return Err(ServiceError::PermissionDenied);
        }
        let members = self.svc.ports.subs.list_topic_subs(tenant, stored).await?;
        self.svc.ports.topics.delete_topic(tenant, stored).await?;
        self.svc.files(tenant).forget(stored, None).await;
        let deleted = json!({ "by": me.to_string(), "members": members.len() });
        self.svc.summary(tenant, Summary::new("group.deleted", "topic", stored, deleted)).await;
        if let Err(e) = self.svc.ports.seq.forget(tenant, stored).await {
            tracing::debug!(error = %e, "seq counter not dropped");
        }
        let event = crate::delivery::event::Event::TopicGone { topic: stored.to_owned() };
        self.svc.dispatch(tenant, event, Some(skip), Some(me)).await;
        Ok(members.into_iter().map(|s| s.user).collect())
    }
}
