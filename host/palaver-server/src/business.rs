//! The `/v1/im/` API's commands, run by the service over the node's business stores and the plugins' rules.

use palaver_core::ports::ClientCommandDoc;
use palaver_gateway::{ImCall, ImCommands, ImOutcome, PluginCall};
use palaver_service::Service;

/// Runs API commands on the service.
pub(crate) struct BusinessApi {
    pub(crate) service: Service,
}

#[async_trait::async_trait]
impl ImCommands for BusinessApi {
    async fn run(&self, call: ImCall) -> ImOutcome {
        match self.service.run_command(call.tenant, call.actor, call.command, call.args).await {
            Ok(v) => ImOutcome::Ok(v),
            Err(e) => ImOutcome::Refused { reason: e.reason, message: e.message },
        }
    }

    async fn run_plugin(&self, call: PluginCall) -> ImOutcome {
        match self.service.run_client_command(call.tenant, call.actor, &call.plugin, &call.command, call.args).await {
            Ok(v) => ImOutcome::Ok(v),
            Err(e) => ImOutcome::Refused { reason: e.reason, message: e.message },
        }
    }

    fn plugin_commands(&self) -> Vec<ClientCommandDoc> {
        self.service.client_commands()
    }
}
