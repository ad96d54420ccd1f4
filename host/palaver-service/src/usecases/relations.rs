//! Friend requests, friendships and blocks between two users of one tenant: the store's race-free primitives
//! (one pending request per pair, a decision taken once, a block that stops requests), for the `friend.*` and
//! `block.*` commands. The commands map each outcome to its reason; these methods are the only code that
//! reaches the relation store for them.

use crate::Inner;
use palaver_core::ports::{Block, CreateOutcome, Decision, Friend, FriendRequest, Relation, RequestStatus};
use palaver_core::{StoreResult, TenantId, UnixMillis, UserId};

/// The relation use cases of one tenant.
pub(crate) struct Relations<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Relations<'_> {
    /// Everything that stands between `me` and `other`, for the rules' facts: friendship, blocks either way, the
    /// pending requests either way.
    pub(crate) async fn between(&self, me: UserId, other: UserId) -> StoreResult<Relation> {
        self.svc.ports.business.relations.relation(self.tenant, me, other).await
    }

    /// How many requests `from` sent since `since` (the rules' daily limit counts the last 24 hours).
    pub(crate) async fn requests_sent_since(&self, from: UserId, since: UnixMillis) -> StoreResult<u64> {
        self.svc.ports.business.relations.count_requests_since(self.tenant, from, since).await
    }

    /// Files a request from `from` to `to`, unless one is pending already, they are friends, or a block stands.
    pub(crate) async fn request(
        &self,
        from: UserId,
        to: UserId,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<CreateOutcome> {
        self.svc.ports.business.relations.create_request(self.tenant, from, to, message, now).await
    }

    /// Decides request `id` once: accepting or rejecting is the addressee's, cancelling the sender's.
    pub(crate) async fn decide(
        &self,
        id: i64,
        actor: UserId,
        decision: Decision,
        now: UnixMillis,
    ) -> StoreResult<FriendRequest> {
        self.svc.ports.business.relations.decide_request(self.tenant, id, actor, decision, now).await
    }

    /// A page of `user`'s incoming or outgoing requests, by id.
    pub(crate) async fn requests(
        &self,
        user: UserId,
        incoming: bool,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FriendRequest>> {
        self.svc.ports.business.relations.list_requests(self.tenant, user, incoming, status, cursor, limit).await
    }

    /// A page of `user`'s friends, by user id.
    pub(crate) async fn friends(&self, user: UserId, cursor: Option<UserId>, limit: usize) -> StoreResult<Vec<Friend>> {
        self.svc.ports.business.relations.list_friends(self.tenant, user, cursor, limit).await
    }

    /// Ends the friendship of `user` and `friend` for both; false if they were not friends.
    pub(crate) async fn unfriend(&self, user: UserId, friend: UserId) -> StoreResult<bool> {
        self.svc.ports.business.relations.remove_friend(self.tenant, user, friend).await
    }

    /// Sets `user`'s private remark on `friend` (`NotFound` unless they are friends).
    pub(crate) async fn set_remark(
        &self,
        user: UserId,
        friend: UserId,
        remark: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<()> {
        self.svc.ports.business.relations.set_remark(self.tenant, user, friend, remark, now).await
    }

    /// `user` blocks `whom`; false if the block stood already.
    pub(crate) async fn block(
        &self,
        user: UserId,
        whom: UserId,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        self.svc.ports.business.relations.block(self.tenant, user, whom, reason, now).await
    }

    /// A page of the users `user` blocks, by user id.
    pub(crate) async fn blocks(&self, user: UserId, cursor: Option<UserId>, limit: usize) -> StoreResult<Vec<Block>> {
        self.svc.ports.business.relations.list_blocks(self.tenant, user, cursor, limit).await
    }

    /// Lifts `user`'s block of `whom`; false if there was none.
    pub(crate) async fn unblock(&self, user: UserId, whom: UserId) -> StoreResult<bool> {
        self.svc.ports.business.relations.unblock(self.tenant, user, whom).await
    }
}
