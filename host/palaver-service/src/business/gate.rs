//! The publish gate: governance and relation rules the publish path enforces on every node at once (a muted
//! group member, a P2P peer who blocked the sender), from state cached beside the topic's member list.
//!
//! The cache is the topic's write-side state, so it is dropped by the same `MembersChanged` event that every
//! membership, role, mute and block change dispatches to all nodes with online members of the topic; the node
//! a sender publishes from always has one (the sender), so no node keeps gating on a stale mute. The age limit
//! of the member cache bounds a change missed on a cut bus connection.

use palaver_api::Reason;
use palaver_core::ports::{GroupRole, Mute};
use palaver_core::{UnixMillis, UserId};
use std::collections::HashMap;

/// What the gate knows about one topic.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// Roles above `Member` (groups).
    pub(crate) roles: HashMap<UserId, GroupRole>,
    /// Mutes, the mute of everyone with `user: None` (groups).
    pub(crate) mutes: Vec<Mute>,
    /// `(by, whom)` for each block between a P2P topic's two users.
    pub(crate) blocks: Vec<(UserId, UserId)>,
    /// P2P senders the tenant's rules refuse (such as a policy requiring friendship), with the reason.
    pub(crate) refused: Vec<(UserId, Reason)>,
    /// The rules could not be asked (a plugin fault): this state is used once and not cached, and the publish
    /// goes ahead, because a broken rule must not stop chat.
    pub(crate) transient: bool,
}

impl Gate {
    /// Why `user` may not publish at `now`, if they may not.
    pub(crate) fn refusal(&self, user: UserId, now: UnixMillis) -> Option<Reason> {
        if self.blocks.iter().any(|&(by, whom)| whom == user && by != user) {
            return Some(Reason::Blocked);
        }
        if let Some((_, why)) = self.refused.iter().find(|(u, _)| *u == user) {
            return Some(*why);
        }
        let role = self.roles.get(&user).copied().unwrap_or(GroupRole::Member);
        if role == GroupRole::Owner {
            return None;
        }
        let muted = self.mutes.iter().filter(|m| m.active(now)).any(|m| match m.user {
            Some(u) => u == user,
            // Muting everyone leaves the admins able to speak, which is what makes it usable for announcements.
            None => role < GroupRole::Admin,
        });
        muted.then_some(Reason::GroupMuted)
    }

    /// The mute of `user` that holds at `now`, for the member list.
    pub(crate) fn mute_of(&self, user: UserId, now: UnixMillis) -> Option<&Mute> {
        self.mutes.iter().find(|m| m.user == Some(user) && m.active(now))
    }
}
