//! The relation aggregate: friend requests, friendships (one row per direction) and blocks between two users.
//!
//! The friends plugin owns the rules (daily limits, who may ask whom); this port owns the atomic primitives that
//! keep those rules race-free: a pending request per ordered pair is unique, a request is decided at most once,
//! an accept creates both directions of the friendship in the same transaction, and a block cancels whatever is
//! pending between the two users in the same transaction.

use crate::{StoreError, StoreResult, TenantId, UnixMillis, UserId};

/// The `Conflict` reason when the actor is the wrong side of the request (the sender accepting or rejecting,
/// the recipient cancelling).
pub const REQUEST_NOT_YOURS: &str = "not yours";

/// The `Conflict` reason when the request was already accepted, rejected, cancelled or expired.
pub const REQUEST_NOT_PENDING: &str = "not pending";

/// Where a friend request stands. Only `Pending` ever changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestStatus {
    Pending,
    Accepted,
    Rejected,
    Cancelled,
    /// Outlived its expiry without an answer; set by a sweep, never by [`RelationStore::decide_request`].
    Expired,
}

impl RequestStatus {
    /// The word stored for the status.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Accepted => "accepted",
            RequestStatus::Rejected => "rejected",
            RequestStatus::Cancelled => "cancelled",
            RequestStatus::Expired => "expired",
        }
    }

    /// The status a stored word names, or `None` for an unknown word.
    pub fn parse(s: &str) -> Option<RequestStatus> {
        match s {
            "pending" => Some(RequestStatus::Pending),
            "accepted" => Some(RequestStatus::Accepted),
            "rejected" => Some(RequestStatus::Rejected),
            "cancelled" => Some(RequestStatus::Cancelled),
            "expired" => Some(RequestStatus::Expired),
            _ => None,
        }
    }
}

/// A request from `from` to become friends with `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendRequest {
    /// Unique within the tenant and increasing with creation, so it doubles as the paging cursor.
    pub id: i64,
    pub from: UserId,
    pub to: UserId,
    pub message: Option<String>,
    pub status: RequestStatus,
    pub created: UnixMillis,
    pub updated: UnixMillis,
    /// When the request left `Pending`.
    pub handled: Option<UnixMillis>,
}

impl FriendRequest {
    /// A request from `from` to `to` as stored under `id` at `now`: pending, not handled yet.
    pub fn pending(id: i64, from: UserId, to: UserId, message: Option<&str>, now: UnixMillis) -> FriendRequest {
        FriendRequest {
            id,
            from,
            to,
            message: message.map(str::to_owned),
            status: RequestStatus::Pending,
            created: now,
            updated: now,
            handled: None,
        }
    }

    /// The request as `decision` by `actor` at `now` leaves it, or the `Conflict` that refuses the decision:
    /// [`REQUEST_NOT_YOURS`] when `actor` is the wrong side, [`REQUEST_NOT_PENDING`] when it was decided already.
    /// Adapters call this on the row they locked, so every backend applies the same rules.
    pub fn decide(&self, actor: UserId, decision: Decision, now: UnixMillis) -> StoreResult<FriendRequest> {
        let (side, status) = match decision {
            Decision::Accept => (self.to, RequestStatus::Accepted),
            Decision::Reject => (self.to, RequestStatus::Rejected),
            Decision::Cancel => (self.from, RequestStatus::Cancelled),
        };
        if side != actor {
            return Err(StoreError::Conflict(REQUEST_NOT_YOURS.to_owned()));
        }
        if self.status != RequestStatus::Pending {
            return Err(StoreError::Conflict(REQUEST_NOT_PENDING.to_owned()));
        }
        Ok(FriendRequest { status, updated: now, handled: Some(now), ..self.clone() })
    }
}

/// One direction of a friendship: `user` has `friend` in their list, under their own remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Friend {
    pub user: UserId,
    pub friend: UserId,
    /// The name `user` gave `friend`; only `user` sees it.
    pub remark: Option<String>,
    pub created: UnixMillis,
    pub updated: UnixMillis,
}

/// `user` blocks `blocked`: `blocked` can neither ask `user` for friendship nor message them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub user: UserId,
    pub blocked: UserId,
    pub reason: Option<String>,
    pub created: UnixMillis,
}

/// Everything between `me` and one other user, as [`RelationStore::relation`] sees it from `me`'s side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relation {
    pub friends: bool,
    pub i_blocked: bool,
    pub blocked_me: bool,
    /// My pending request to them.
    pub pending_out: Option<FriendRequest>,
    /// Their pending request to me.
    pub pending_in: Option<FriendRequest>,
}

/// What [`RelationStore::create_request`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// A new pending request was stored.
    Created(FriendRequest),
    /// A request from the same sender to the same recipient was already pending; it is returned unchanged and
    /// nothing was written.
    AlreadyPending(FriendRequest),
    /// One of the two blocks the other; nothing was written.
    Blocked,
    /// The two are already friends; nothing was written.
    AlreadyFriends,
}

/// How a request is decided: `Accept` and `Reject` by its recipient, `Cancel` by its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Accept,
    Reject,
    Cancel,
}

/// Friend requests, friendships and blocks.
#[async_trait::async_trait]
pub trait RelationStore: Send + Sync {
    /// Friendship, blocks both ways and pending requests both ways between `me` and `other`.
    async fn relation(&self, tenant: TenantId, me: UserId, other: UserId) -> StoreResult<Relation>;

    /// Stores a pending request from `from` to `to`, checking in the same transaction that neither blocks the
    /// other and that they are not friends yet. A request already pending from `from` to `to` is returned as
    /// `AlreadyPending`, never duplicated, even when two calls race.
    async fn create_request(
        &self,
        tenant: TenantId,
        from: UserId,
        to: UserId,
        message: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<CreateOutcome>;

    /// How many requests (in any status) `from` created at or after `since`, for a daily limit.
    async fn count_requests_since(&self, tenant: TenantId, from: UserId, since: UnixMillis) -> StoreResult<u64>;

    /// Decides a pending request and returns it as it now is. Accepting also makes the two friends in both
    /// directions (keeping existing rows and remarks) and accepts a pending request the other way, in the same
    /// transaction. `NotFound` if there is no such request or `actor` is neither of its users;
    /// `Conflict(REQUEST_NOT_YOURS)` if `actor` is the wrong side for `decision`; `Conflict(REQUEST_NOT_PENDING)`
    /// if it was already decided, also when a concurrent call decided it first.
    async fn decide_request(
        &self,
        tenant: TenantId,
        id: i64,
        actor: UserId,
        decision: Decision,
        now: UnixMillis,
    ) -> StoreResult<FriendRequest>;

    /// The user's incoming (sent to them) or outgoing requests, optionally in one status, newest first, at most
    /// `limit`, starting strictly below the id `cursor`.
    async fn list_requests(
        &self,
        tenant: TenantId,
        user: UserId,
        incoming: bool,
        status: Option<RequestStatus>,
        cursor: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FriendRequest>>;

    /// The user's friends ordered by friend id reinterpreted as a signed 64-bit integer, at most `limit`,
    /// starting strictly above `cursor`.
    async fn list_friends(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Friend>>;

    /// Ends the friendship in both directions at once. False if they were not friends.
    async fn remove_friend(&self, tenant: TenantId, user: UserId, friend: UserId) -> StoreResult<bool>;

    /// Sets or clears the remark `user` keeps for `friend`. `NotFound` if `friend` is not in `user`'s list.
    async fn set_remark(
        &self,
        tenant: TenantId,
        user: UserId,
        friend: UserId,
        remark: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<()>;

    /// Makes `user` block `blocked` and cancels every pending request between the two, in one transaction.
    /// False (and nothing changed) if the block existed already.
    async fn block(
        &self,
        tenant: TenantId,
        user: UserId,
        blocked: UserId,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> StoreResult<bool>;

    /// Lifts the block. False if there was none.
    async fn unblock(&self, tenant: TenantId, user: UserId, blocked: UserId) -> StoreResult<bool>;

    /// Whom the user blocks, in the order of [`RelationStore::list_friends`], starting strictly above `cursor`.
    async fn list_blocks(
        &self,
        tenant: TenantId,
        user: UserId,
        cursor: Option<UserId>,
        limit: usize,
    ) -> StoreResult<Vec<Block>>;

    /// True if `by` blocks `whom`. One key lookup, cheap enough for every P2P publish.
    async fn is_blocked(&self, tenant: TenantId, by: UserId, whom: UserId) -> StoreResult<bool>;
}
