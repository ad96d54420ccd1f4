//! Asking the tenant's business rules: the publish gate (mutes, blocks and the P2P send rule, cached beside
//! the topic's member list and loaded with no lock held) and the timed decision of one command.

use crate::Inner;
use crate::business::gate::Gate;
use crate::delivery::fanout::SHARED_MEMBERS_MAX_AGE_MS;
use crate::error::{ServiceError, ServiceResult};
use palaver_api::facts::P2pSendFacts;
use palaver_api::{CommandName, Facts, Reason};
use palaver_core::ports::{ClientCommandDoc, ClientCommandState, RuleVerdict};
use palaver_core::{TenantId, UnixMillis, UserId};
use serde_json::{Value, json};
use std::sync::Arc;

/// The rule asked before a P2P message, once per topic and sender while the gate is cached.
pub(crate) const P2P_SEND: CommandName = CommandName::FriendP2pSend;

impl Inner {
    /// Refuses the publish if a mute or a block stops `me` from writing to `stored` (the reason's ctrl code,
    /// 403 for all of the gate's own, with the reason's name as the text).
    pub(crate) async fn check_gate(&self, tenant: TenantId, stored: &str, me: UserId) -> ServiceResult<()> {
        let gate = self.gate(tenant, stored).await?;
        match gate.refusal(me, crate::now_millis()) {
            None => Ok(()),
            Some(reason) => Err(ServiceError::Rejected { code: reason.code(), reason: reason.name().to_owned() }),
        }
    }

    /// The topic's gate state, from the cache beside its member list or the store.
    pub(crate) async fn gate(&self, tenant: TenantId, stored: &str) -> ServiceResult<Arc<Gate>> {
        let topic = self.topics.get(tenant, stored);
        let now = crate::now_millis();
        // Aged out on one node too: a tenant's rule settings can change without any membership change.
        let generation = match topic.cached(|c| &mut c.gate, |at| now - at < SHARED_MEMBERS_MAX_AGE_MS) {
            Ok(gate) => return Ok(gate),
            Err(generation) => generation,
        };
        // Loaded (store reads, perhaps a plugin call) with no lock held.
        let gate = Arc::new(self.load_gate(tenant, stored, now).await?);
        if !gate.transient {
            topic.store(|c| &mut c.gate, generation, gate.clone(), now);
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
            if biz.rules.available(tenant, P2P_SEND.name()) {
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
            let input = Facts::FriendP2pSend(P2pSendFacts { friends }).rule_input(&json!({ "to": to.to_string() }));
            match self.decide(tenant, from, P2P_SEND.name(), &input).await {
                RuleVerdict::Refuse { status, .. } if status >= 500 => gate.transient = true,
                // A reason outside the table is shown as the table's generic rule refusal.
                RuleVerdict::Refuse { reason, .. } => {
                    gate.refused.push((from, Reason::parse(&reason).unwrap_or(Reason::RuleRefused)));
                }
                RuleVerdict::Allow(_) | RuleVerdict::NoRules => {}
            }
        }
        Ok(())
    }

    /// Asks the tenant's rules about `command`, timing the call for `palaver_business_rule_seconds`.
    pub(crate) async fn decide(&self, tenant: TenantId, actor: UserId, command: &str, input: &str) -> RuleVerdict {
        let started = std::time::Instant::now();
        let verdict = self.ports.business.rules.decide(tenant, actor, command, input).await;
        self.metrics.rule_call(started.elapsed());
        verdict
    }

    /// True if some rule set of `tenant` holds `command`: a business command no plugin decides is off.
    pub(crate) fn rules_hold(&self, tenant: TenantId, command: CommandName) -> bool {
        self.ports.business.rules.available(tenant, command.name())
    }

    /// Whether plugin `plugin` offers `command` to clients, and runs for `tenant`.
    pub(crate) fn client_command(&self, tenant: TenantId, plugin: &str, command: &str) -> ClientCommandState {
        self.ports.business.rules.client_command(tenant, plugin, command)
    }

    /// Runs a plugin's client command with the client's `args`, timing it for `palaver_business_rule_seconds`.
    pub(crate) async fn run_client_command(
        &self,
        tenant: TenantId,
        actor: UserId,
        plugin: &str,
        command: &str,
        args: &Value,
    ) -> RuleVerdict {
        let started = std::time::Instant::now();
        let verdict = self.ports.business.rules.run_client_command(tenant, actor, plugin, command, args).await;
        self.metrics.rule_call(started.elapsed());
        verdict
    }

    /// Every command the node's plugins offer to clients.
    pub(crate) fn client_commands(&self) -> Vec<ClientCommandDoc> {
        self.ports.business.rules.client_commands()
    }
}
