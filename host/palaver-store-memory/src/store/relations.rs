//! The relation port of the in-memory store: friend requests, friendships and blocks in the tenant's maps.
//!
//! Every call runs under the store's one lock, so each is atomic the way the SQL adapters' transactions are: two
//! racing accepts see the request one after the other, and a block and a request never interleave.

use super::MemoryStore;
use super::signed;
use palaver_core::ports::{
    Block, CreateOutcome, Decision, Friend, FriendRequest, Relation, RelationStore, RequestStatus,
};
use palaver_core::{StoreError, StoreResult, TenantId, UnixMillis, UserId};
use std::collections::BTreeMap;

/// One tenant's relations.
#[derive(Default)]
pub(super) struct Relations {
    /// Requests by id; ids rise with creation, like an auto-increment column.
    requests: BTreeMap<i64, FriendRequest>,
    last_request_id: i64,
    /// Friendships keyed by (user, friend), one entry per direction.
    friends: BTreeMap<(UserId, UserId), Friend>,
    /// Blocks keyed by (user, blocked).
    blocks: BTreeMap<(UserId, UserId), Block>,
}

impl Relations {
    /// The pending request from `from` to `to`, if any.
    fn pending(&self, from: UserId, to: UserId) -> Option<&FriendRequest> {
        self.requests.values().find(|r| r.from == from && r.to == to && r.status == RequestStatus::Pending)
    }

    /// Moves every pending request from `from` to `to` into `status`.
    fn settle(&mut self, from: UserId, to: UserId, status: RequestStatus, now: UnixMillis) {
        for r in self.requests.values_mut().filter(|r| r.from == from && r.to == to) {
            if r.status == RequestStatus::Pending {
                (r.status, r.updated, r.handled) = (status, now, Some(now));
            }
        }
    }

    /// Adds `user → friend` unless it exists, so an existing remark survives.
    fn befriend(&mut self, user: UserId, friend: UserId, now: UnixMillis) {
        self.friends.entry((user, friend)).or_insert(Friend { user, friend, remark: None, created: now, updated: now });
    }
}

/// The first `limit` of `items` strictly above `cursor`, ordered by the signed form of its id, the way the SQL
/// adapters order their `BIGINT` columns, so that every adapter pages in the same order.
fn page_by_id<T: Clone>(items: Vec<(UserId, &T)>, cursor: Option<UserId>, limit: usize) -> Vec<T> {
    let mut items: Vec<_> = items
        .into_iter()
        .filter(|(id, _)| cursor.is_none_or(|c| signed(*id) > signed(c)))
        .map(|(id, item)| (signed(id), item))
        .collect();
    items.sort_by_key(|(key, _)| *key);
    items.into_iter().take(limit).map(|(_, item)| item.clone()).collect()
}

#[async_trait::async_trait]
impl RelationStore for MemoryStore {
    async fn relation(&self, tenant: TenantId, me: UserId, other: UserId) -> StoreResult<Relation> {
        Ok(self.with_tenant(tenant, |t| {
            let r = &t.relations;
            Relation {
                friends: r.friends.contains_key(&(me, other)),
                i_blocked: r.blocks.contains_key(&(me, other)),
                blocked_me: r.blocks.contains_key(&(other, me)),
                pending_out: r.pending(me, other).cloned(),
                pending_in: r.pending(other, me).cloned(),
            }
        }))
    }

    async fn create_request(
        &self,
        tenant: TenantId,
        from: UserId,
        to: UserId,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<CreateOutcome> {
        Ok(self.with_tenant(tenant, |t| {
            let r = &mut t.relations;
            if r.blocks.contains_key(&(from, to)) || r.blocks.contains_key(&(to, from)) {
                return CreateOutcome::Blocked;
            }
            if r.friends.contains_key(&(from, to)) {
                return CreateOutcome::AlreadyFriends;
            }
            if let Some(existing) = r.pending(from, to) {
                return CreateOutcome::AlreadyPending(existing.clone());
            }
            r.last_request_id += 1;
            let request = FriendRequest {
                id: r.last_request_id,
                from,
                to,
                message: message.map(str::to_owned),
                status: RequestStatus::Pending,
                created: now,
                updated: now,
                handled: None,
            };
            r.requests.insert(request.id, request.clone());
            CreateOutcome::Created(request)
        }))
    }

    async fn count_requests_since(&self, tenant: TenantId, from: UserId, since: UnixMillis) -> StoreResult<u64> {
        Ok(self.with_tenant(tenant, |t| {
            t.relations.requests.values().filter(|r| r.from == from && r.created >= since).count() as u64
        }))
    }

    async fn decide_request(
        &self,
        tenant: TenantId,
        id: i64,
        actor: UserId,
        decision: Decision,
        now: UnixMillis,
    ) -> StoreResult<FriendRequest> {
        self.with_tenant(tenant, |t| {
            let r = &mut t.relations;
            let request = r.requests.get_mut(&id).filter(|q| q.from == actor || q.to == actor);
            let request = request.ok_or(StoreError::NotFound)?;
            let decided = request.decide(actor, decision, now)?;
            *request = decided.clone();
            if decision == Decision::Accept {
                r.befriend(decided.from, decided.to, now);
                r.befriend(decided.to, decided.from, now);
                r.settle(decided.to, decided.from, RequestStatus::Accepted, now);
            }
            Ok(decided)
        })
    }

    async fn list_requests(
        &self,
        tenant: TenantId,
        user: UserId,
        incoming: bool,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FriendRequest>> {
        Ok(self.with_tenant(tenant, |t| {
            let below = cursor.unwrap_or(i64::MAX);
            t.relations
                .requests
                .range(..below)
                .rev()
                .map(|(_, r)| r)
                .filter(|r| if incoming { r.to == user } else { r.from == user })
                .filter(|r| status.is_none_or(|s| r.status == s))
                .take(limit)
                .cloned()
                .collect()
        }))
    }

    async fn list_friends(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Friend>> {
        Ok(self.with_tenant(tenant, |t| {
            let mine = t.relations.friends.range((user, UserId(0))..=(user, UserId(u64::MAX)));
            page_by_id(mine.map(|((_, f), v)| (*f, v)).collect(), cursor, limit)
        }))
    }

    async fn remove_friend(&self, tenant: TenantId, user: UserId, friend: UserId) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            let a = t.relations.friends.remove(&(user, friend)).is_some();
            let b = t.relations.friends.remove(&(friend, user)).is_some();
            a || b
        }))
    }

    async fn set_remark(
        &self,
        tenant: TenantId,
        user: UserId,
        friend: UserId,
        remark: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        self.with_tenant(tenant, |t| {
            let row = t.relations.friends.get_mut(&(user, friend)).ok_or(StoreError::NotFound)?;
            (row.remark, row.updated) = (remark.map(str::to_owned), now);
            Ok(())
        })
    }

    async fn block(
        &self,
        tenant: TenantId,
        user: UserId,
        blocked: UserId,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| {
            let r = &mut t.relations;
            if r.blocks.contains_key(&(user, blocked)) {
                return false;
            }
            let block = Block { user, blocked, reason: reason.map(str::to_owned), created: now };
            r.blocks.insert((user, blocked), block);
            r.settle(user, blocked, RequestStatus::Cancelled, now);
            r.settle(blocked, user, RequestStatus::Cancelled, now);
            true
        }))
    }

    async fn unblock(&self, tenant: TenantId, user: UserId, blocked: UserId) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| t.relations.blocks.remove(&(user, blocked)).is_some()))
    }

    async fn list_blocks(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Block>> {
        Ok(self.with_tenant(tenant, |t| {
            let mine = t.relations.blocks.range((user, UserId(0))..=(user, UserId(u64::MAX)));
            page_by_id(mine.map(|((_, b), v)| (*b, v)).collect(), cursor, limit)
        }))
    }

    async fn is_blocked(&self, tenant: TenantId, by: UserId, whom: UserId) -> StoreResult<bool> {
        Ok(self.with_tenant(tenant, |t| t.relations.blocks.contains_key(&(by, whom))))
    }
}
