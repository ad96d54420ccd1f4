//! The group governance port of the in-memory store: roles, mutes, settings, join requests and announcements in
//! the tenant's maps.
//!
//! Every call runs under the store's one lock, so each is atomic the way the SQL adapters' transactions are: an
//! admin count and the grant it allows, or two racing transfers, or two decisions of one request, see each other
//! one after the other.

use super::MemoryStore;
use super::signed;
use palaver_core::ports::{
    Announcement, AnnouncementDraft, AnnouncementView, GroupRole, GroupSettings, GroupStore, JoinDecision, JoinOutcome,
    JoinRequest, Mute, NOT_OWNER, RequestStatus, RoleChange, RoleGrant, check_admin_limit,
};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use std::collections::{BTreeMap, HashMap};

/// One tenant's governance state.
#[derive(Default)]
pub(super) struct Groups {
    /// Stored roles above `Member`, keyed by (topic, user).
    roles: BTreeMap<(String, UserId), RoleGrant>,
    /// Mutes keyed by (topic, user); `None` is the mute of everyone.
    mutes: BTreeMap<(String, Option<UserId>), Mute>,
    settings: HashMap<String, GroupSettings>,
    /// Join requests by id; ids rise with creation, like an auto-increment column.
    requests: BTreeMap<i64, JoinRequest>,
    last_request_id: i64,
    /// Announcements by id, with whether they were removed.
    announcements: BTreeMap<i64, (Announcement, bool)>,
    last_announcement_id: i64,
    /// When each (announcement, user) was first read.
    reads: BTreeMap<(i64, UserId), UnixMillis>,
}

impl Groups {
    /// The group's stored roles, in no particular order.
    fn roles_of<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = &'a RoleGrant> + 'a {
        self.roles.iter().filter(move |((t, _), _)| t == topic).map(|(_, g)| g)
    }

    /// The group's stored owner, if any.
    fn owner(&self, topic: &str) -> Option<UserId> {
        self.roles_of(topic).find(|g| g.role == GroupRole::Owner).map(|g| g.user)
    }

    /// Stores `role` for `user`, keeping nothing of an earlier grant.
    fn grant(&mut self, topic: &str, user: UserId, role: GroupRole, by: Option<UserId>, now: UnixMillis) {
        let grant = RoleGrant { user, role, granted_by: by, updated: now };
        self.roles.insert((topic.to_owned(), user), grant);
    }

    /// The live announcement `id` of the group, for changing it.
    fn live_mut(&mut self, topic: &str, id: i64) -> Option<&mut Announcement> {
        self.announcements.get_mut(&id).filter(|(a, removed)| a.topic == topic && !removed).map(|(a, _)| a)
    }
}

/// The key SQL orders user ids by: their signed column form, so every adapter lists them in the same order.
fn order_key(user: Option<UserId>) -> (bool, i64) {
    (user.is_some(), user.map_or(0, signed))
}

#[async_trait::async_trait]
impl GroupStore for MemoryStore {
    async fn roles(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<RoleGrant>> {
        Ok(self.with_tenant(tenant, |t| {
            let mut roles: Vec<RoleGrant> = t.groups.roles_of(topic).cloned().collect();
            roles.sort_by_key(|g| (g.role != GroupRole::Owner, signed(g.user)));
            roles
        }))
    }

    async fn ensure_owner(&self, tenant: TenantId, topic: &str, owner: UserId, now: UnixMillis) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            if t.groups.owner(topic).is_some() {
                return false;
            }
            t.groups.grant(topic, owner, GroupRole::Owner, None, now);
            true
        }))
    }

    async fn set_role(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        role: GroupRole,
        by: UserId,
        max_admins: Option<u32>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        self.with_tenant(tenant, |t| {
            let g = &mut t.groups;
            let current = g.roles.get(&(topic.to_owned(), user)).map_or(GroupRole::Member, |r| r.role);
            match current.change_to(role)? {
                RoleChange::Keep => return Ok(false),
                RoleChange::Revoke => {
                    g.roles.remove(&(topic.to_owned(), user));
                }
                RoleChange::GrantAdmin => {
                    let admins = g.roles_of(topic).filter(|r| r.role == GroupRole::Admin).count();
                    check_admin_limit(admins as u64, max_admins)?;
                    g.grant(topic, user, GroupRole::Admin, Some(by), now);
                }
            }
            Ok(true)
        })
    }

    async fn transfer_owner(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        to: UserId,
        now: UnixMillis,
    ) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let g = &mut t.groups;
            if g.owner(topic) != Some(from) {
                return Err(StoreError::Conflict(NOT_OWNER.to_owned()));
            }
            if from != to {
                g.grant(topic, from, GroupRole::Admin, Some(from), now);
                g.grant(topic, to, GroupRole::Owner, Some(from), now);
            }
            Ok(())
        })
    }

    async fn mute(
        &self,
        tenant: TenantId,
        topic: &str,
        user: Option<UserId>,
        by: UserId,
        reason: Option<&str>,
        until: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let key = (topic.to_owned(), user);
            let created = t.groups.mutes.get(&key).map_or(now, |m| m.created);
            let reason = reason.map(str::to_owned);
            t.groups.mutes.insert(key, Mute { user, muted_by: Some(by), reason, until, created, updated: now });
        });
        Ok(())
    }

    async fn unmute(&self, tenant: TenantId, topic: &str, user: Option<UserId>) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| t.groups.mutes.remove(&(topic.to_owned(), user)).is_some()))
    }

    async fn mutes(&self, tenant: TenantId, topic: &str, now: UnixMillis) -> StoreResult<Vec<Mute>> {
        Ok(self.with_tenant(tenant, |t| {
            let mine = t.groups.mutes.iter().filter(|((t, _), m)| t == topic && m.active(now));
            let mut mutes: Vec<Mute> = mine.map(|(_, m)| m.clone()).collect();
            mutes.sort_by_key(|m| order_key(m.user));
            mutes
        }))
    }

    async fn forget_member(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let key = (topic.to_owned(), user);
            if t.groups.roles.get(&key).is_some_and(|r| r.role != GroupRole::Owner) {
                t.groups.roles.remove(&key);
            }
            t.groups.mutes.remove(&(topic.to_owned(), Some(user)));
        });
        Ok(())
    }

    async fn settings(&self, tenant: TenantId, topic: &str) -> StoreResult<GroupSettings> {
        Ok(self.with_tenant(tenant, |t| t.groups.settings.get(topic).cloned().unwrap_or_default()))
    }

    async fn set_settings(
        &self,
        tenant: TenantId,
        topic: &str,
        settings: &GroupSettings,
        now: UnixMillis,
    ) -> StoreResult<()> {
        let stored = GroupSettings { updated: now, ..settings.clone() };
        self.with_tenant(tenant, |t| t.groups.settings.insert(topic.to_owned(), stored));
        Ok(())
    }

    async fn create_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
        inviter: Option<UserId>,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<JoinOutcome> {
        Ok(self.with_tenant(tenant, |t| {
            let g = &mut t.groups;
            let pending =
                g.requests.values().find(|r| r.topic == topic && r.user == user && r.status == RequestStatus::Pending);
            if let Some(existing) = pending {
                return JoinOutcome::AlreadyPending(existing.clone());
            }
            g.last_request_id += 1;
            let request = JoinRequest::pending(g.last_request_id, topic, user, inviter, message, now);
            g.requests.insert(request.id, request.clone());
            JoinOutcome::Created(request)
        }))
    }

    async fn pending_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
    ) -> StoreResult<Option<JoinRequest>> {
        Ok(self.with_tenant(tenant, |t| {
            t.groups
                .requests
                .values()
                .find(|r| r.topic == topic && r.user == user && r.status == RequestStatus::Pending)
                .cloned()
        }))
    }

    async fn decide_join_request(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        by: UserId,
        decision: JoinDecision,
        now: UnixMillis,
    ) -> StoreResult<JoinRequest> {
        self.with_tenant(tenant, |t| {
            let request = t.groups.requests.get_mut(&id).filter(|r| r.topic == topic).ok_or(StoreError::NotFound)?;
            *request = request.decide(by, decision, now)?;
            Ok(request.clone())
        })
    }

    async fn list_join_requests(
        &self,
        tenant: TenantId,
        topic: &str,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<JoinRequest>> {
        Ok(self.with_tenant(tenant, |t| {
            let below = t.groups.requests.range(..cursor.unwrap_or(i64::MAX)).rev().map(|(_, r)| r);
            let mine = below.filter(|r| r.topic == topic && status.is_none_or(|s| r.status == s));
            mine.take(limit).cloned().collect()
        }))
    }

    async fn add_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        author: UserId,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        Ok(self.with_tenant(tenant, |t| {
            let g = &mut t.groups;
            g.last_announcement_id += 1;
            let announcement = Announcement::first(g.last_announcement_id, topic, author, draft, now);
            g.announcements.insert(announcement.id, (announcement.clone(), false));
            announcement
        }))
    }

    async fn update_announcement(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        draft: &AnnouncementDraft,
        now: UnixMillis,
    ) -> StoreResult<Announcement> {
        self.with_tenant(tenant, |t| {
            let a = t.groups.live_mut(topic, id).ok_or(StoreError::NotFound)?;
            (a.title, a.content, a.pinned) = (draft.title.clone(), draft.content.clone(), draft.pinned);
            (a.version, a.updated) = (a.version + 1, now);
            Ok(a.clone())
        })
    }

    async fn delete_announcement(&self, tenant: TenantId, topic: &str, id: i64, now: UnixMillis) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            let live = t.groups.announcements.get_mut(&id).filter(|(a, removed)| a.topic == topic && !removed);
            live.map(|(a, removed)| (a.updated, *removed) = (now, true)).is_some()
        }))
    }

    async fn list_announcements(
        &self,
        tenant: TenantId,
        topic: &str,
        viewer: UserId,
        limit: usize,
    ) -> StoreResult<Vec<AnnouncementView>> {
        Ok(self.with_tenant(tenant, |t| {
            let g = &t.groups;
            let live = g.announcements.values().rev().filter(|(a, removed)| a.topic == topic && !removed);
            let mut live: Vec<&Announcement> = live.map(|(a, _)| a).collect();
            // A stable sort keeps newest first within the pinned and the unpinned part.
            live.sort_by_key(|a| !a.pinned);
            let view = |a: &Announcement| AnnouncementView {
                announcement: a.clone(),
                read: g.reads.get(&(a.id, viewer)).copied(),
                reads: g.reads.range((a.id, UserId(0))..=(a.id, UserId(u64::MAX))).count() as u64,
            };
            live.into_iter().take(limit).map(view).collect()
        }))
    }

    async fn mark_announcement_read(
        &self,
        tenant: TenantId,
        topic: &str,
        id: i64,
        user: UserId,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        self.with_tenant(tenant, |t| {
            t.groups.live_mut(topic, id).ok_or(StoreError::NotFound)?;
            let first = !t.groups.reads.contains_key(&(id, user));
            t.groups.reads.entry((id, user)).or_insert(now);
            Ok(first)
        })
    }
}
