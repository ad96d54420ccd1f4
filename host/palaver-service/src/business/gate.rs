//! The publish gate: governance and relation rules the publish path enforces on every node at once (a muted
//! group member, a P2P peer who blocked the sender), from state cached beside the topic's member list.
//!
//! The cache is the topic's write-side state, so it is dropped by the same `MembersChanged` event that every
//! membership, role, mute and block change dispatches to all nodes with online members of the topic; the node
//! a sender publishes from always has one (the sender), so no node keeps gating on a stale mute. The age limit
//! of the member cache bounds a change missed on a cut bus connection.

use crate::Inner;
use crate::delivery::SHARED_MEMBERS_MAX_AGE_MS;
use crate::error::{ServiceError, ServiceResult};
use palaver_core::ports::{GroupRole, Mute, RuleVerdict};
use palaver_core::{TenantId, UnixMillis, UserId};
use palaver_proto::Code;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// The reason a muted member's publish is refused with (ctrl 403).
pub const GROUP_MUTED: &str = "GROUP_MUTED";

/// The reason a publish to a P2P peer who blocked the sender is refused with (ctrl 403).
pub const BLOCKED: &str = "BLOCKED";

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
    pub(crate) refused: Vec<(UserId, String)>,
    /// The rules could not be asked (a plugin fault): this state is used once and not cached, and the publish
    /// goes ahead, because a broken rule must not stop chat.
    transient: bool,
}

impl Gate {
    /// Why `user` may not publish at `now`, if they may not.
    pub(crate) fn refusal(&self, user: UserId, now: UnixMillis) -> Option<String> {
        if self.blocks.iter().any(|&(by, whom)| whom == user && by != user) {
            return Some(BLOCKED.to_owned());
        }
        if let Some((_, why)) = self.refused.iter().find(|(u, _)| *u == user) {
            return Some(why.clone());
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
        muted.then(|| GROUP_MUTED.to_owned())
    }

    /// The mute of `user` that holds at `now`, for the member list.
    pub(crate) fn mute_of(&self, user: UserId, now: UnixMillis) -> Option<&Mute> {
        self.mutes.iter().find(|m| m.user == Some(user) && m.active(now))
    }
}

impl Inner {
    /// Refuses the publish if a mute or a block stops `me` from writing to `stored` (ctrl 403 with a reason).
    pub(crate) async fn check_gate(&self, tenant: TenantId, stored: &str, me: UserId) -> ServiceResult<()> {
        let gate = self.gate(tenant, stored).await?;
        match gate.refusal(me, crate::now_millis()) {
            None => Ok(()),
            Some(reason) => Err(ServiceError::Rejected { code: Code::PermissionDenied, reason }),
        }
    }

    /// The topic's gate state, from the cache beside its member list or the store.
    pub(crate) async fn gate(&self, tenant: TenantId, stored: &str) -> ServiceResult<Arc<Gate>> {
        let lock = self.topics.get(tenant, stored);
        let mut state = lock.lock().await;
        let now = crate::now_millis();
        // Aged out on one node too: a tenant's rule settings can change without any membership change.
        if let Some(g) = state.gate.as_ref().filter(|_| now - state.gate_at < SHARED_MEMBERS_MAX_AGE_MS) {
            return Ok(g.clone());
        }
        let gate = Arc::new(self.load_gate(tenant, stored, now).await?);
        if !gate.transient {
            state.gate = Some(gate.clone());
            state.gate_at = now;
        }
        Ok(gate)
    }

    async fn load_gate(&self, tenant: TenantId, stored: &str, now: UnixMillis) -> ServiceResult<Gate> {
        let biz = &self.ports.business;
        if stored.starts_with("p2p") {
            let Some((a, b)) = palaver_core::p2p_users(stored) else { return Ok(Gate::default()) };
            let mut blocks = Vec::new();
            for (by, whom) in [(a, b), (b, a)] {
                if biz.relations.is_blocked(tenant, by, whom).await? {
                    blocks.push((by, whom));
                }
            }
            let mut gate = Gate { blocks, ..Gate::default() };
            if biz.rules.available(tenant, P2P_SEND) {
                self.ask_p2p_rules(tenant, a, b, &mut gate).await?;
            }
            return Ok(gate);
        }
        let roles = biz.groups.roles(tenant, stored).await?.into_iter().map(|g| (g.user, g.role)).collect();
        let mutes = biz.groups.mutes(tenant, stored, now).await?;
        Ok(Gate { roles, mutes, ..Gate::default() })
    }

    /// Asks the rules whether each of a P2P topic's users may write to the other (`friend.p2p.send`).
    async fn ask_p2p_rules(&self, tenant: TenantId, a: UserId, b: UserId, gate: &mut Gate) -> ServiceResult<()> {
        let biz = &self.ports.business;
        let friends = biz.relations.relation(tenant, a, b).await?.friends;
        for (from, to) in [(a, b), (b, a)] {
            let input = json!({ "args": { "to": to.to_string() }, "facts": { "friends": friends } });
            match self.decide(tenant, from, P2P_SEND, &input).await {
                RuleVerdict::Refuse { status, .. } if status >= 500 => gate.transient = true,
                RuleVerdict::Refuse { reason, .. } => gate.refused.push((from, reason)),
                RuleVerdict::Allow(_) | RuleVerdict::NoRules => {}
            }
        }
        Ok(())
    }
}

/// The rule asked before a P2P message, once per topic and sender while the gate is cached.
const P2P_SEND: &str = "friend.p2p.send";
