//! Commands plugins offer to clients themselves (`POST /v1/im/plugins/{plugin}/commands/{command}`): no host
//! step before or after, so the plugin gets the client's arguments as they came (no facts the host gathered)
//! and its answer is the result. The host still authenticates the actor, bounds the body, times the call and
//! maps every refusal onto the reasons table, as for its own commands.

use super::{BizError, BizResult, outcome, refusal};
use crate::Service;
use palaver_api::Reason;
use palaver_core::ports::{ClientCommandDoc, ClientCommandState, RuleVerdict};
use palaver_core::{TenantId, UserId};
use serde_json::Value;
use tracing::Instrument;

impl Service {
    /// Runs command `command` of plugin `plugin` for `actor` with the client's `args`, and answers its result.
    pub async fn run_client_command(
        &self,
        tenant: TenantId,
        actor: UserId,
        plugin: &str,
        command: &str,
        args: Value,
    ) -> BizResult<Value> {
        match self.inner.client_command(tenant, plugin, command) {
            ClientCommandState::On => {}
            ClientCommandState::Off => return Err(off(plugin, command)),
            ClientCommandState::Unknown => {
                return Err(BizError::new(
                    Reason::UnknownCommand,
                    format!("plugin {plugin:?} offers no command {command:?} to clients; see /v1/openapi.json"),
                ));
            }
        }
        let span = tracing::debug_span!("plugin_command", plugin, command, tenant = tenant.0);
        let started = std::time::Instant::now();
        let verdict = self.inner.run_client_command(tenant, actor, plugin, command, &args).instrument(span).await;
        let result = match verdict {
            RuleVerdict::Allow(v) => Ok(v),
            RuleVerdict::Refuse { status, reason, message } => Err(refusal(command, status, &reason, message)),
            // Disabled or unloaded between the lookup and the call.
            RuleVerdict::NoRules => Err(off(plugin, command)),
        };
        self.inner.metrics.business_command(outcome(&result), started.elapsed());
        result
    }

    /// Every command the node's plugins offer to clients, for the API's OpenAPI document.
    pub fn client_commands(&self) -> Vec<ClientCommandDoc> {
        self.inner.client_commands()
    }
}

fn off(plugin: &str, command: &str) -> BizError {
    BizError::new(
        Reason::CommandNotAvailable,
        format!("{command} is not enabled for this tenant (plugin {plugin} is off)"),
    )
}
