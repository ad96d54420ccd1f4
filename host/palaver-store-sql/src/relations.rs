//! The relation tables' shared parts beyond their rows ([`FriendRequestRow`] and
//! [`FriendColumns`](crate::columns::FriendColumns)): the block row, how a relation is assembled from what was
//! read, and what a decision finds.

use crate::columns::{CorruptRow, user_of};
use crate::rows::{FriendRequestRow, decode_all};
use palaver_core::ports::{Block, Decision, FriendRequest, Relation};
use palaver_core::{StoreError, StoreResult, UnixMillis, UserId};

/// A `user_blocks` row of one user: `blocked_id, reason, created_at`.
pub type BlockRow = (i64, Option<String>, UnixMillis);

/// `user`'s block a row holds.
pub fn block_of(user: UserId, (blocked, reason, created): BlockRow) -> Block {
    Block { user, blocked: user_of(blocked), reason, created }
}

/// The relation between `me` and another user, from whether they are friends, whether `me` blocked them and
/// whether they blocked `me`, and the pending requests between the two (at most one each way).
pub fn relation_of(
    me: UserId,
    (friends, i_blocked, blocked_me): (bool, bool, bool),
    pending: Vec<FriendRequestRow>,
) -> Result<Relation, CorruptRow> {
    let (mut pending_out, mut pending_in) = (None, None);
    for r in decode_all::<_, FriendRequest>(pending)? {
        if r.from == me { pending_out = Some(r) } else { pending_in = Some(r) }
    }
    Ok(Relation { friends, i_blocked, blocked_me, pending_out, pending_in })
}

/// The request `actor` decides, as decided, from its row read under the adapter's lock: `NotFound` unless there is
/// one and `actor` is a party to it, else what [`FriendRequest::decide`] answers.
pub fn decide(
    row: Option<FriendRequestRow>,
    actor: UserId,
    decision: Decision,
    now: UnixMillis,
) -> StoreResult<FriendRequest> {
    let request = row.map(FriendRequest::try_from).transpose()?;
    let request = request.filter(|r| r.from == actor || r.to == actor).ok_or(StoreError::NotFound)?;
    request.decide(actor, decision, now)
}
