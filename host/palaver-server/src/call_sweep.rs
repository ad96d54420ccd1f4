//! The call sweep: every `calls.sweep_interval_ms`, this node ends the live calls of every active tenant whose
//! node died with their timers (`Service::sweep_calls`). Every node sweeps; the ends are conditional updates, so
//! a call another node ended first is only a refused update here. In a cluster the live node ids come from the
//! shared registry, so a call with a party on a node that stopped heartbeating ends as `disconnected` within one
//! sweep of the node's claim expiring.

use palaver_core::ports::{NodeRegistry, TenantStore};
use palaver_service::Service;
use std::sync::Arc;
use std::time::Duration;

/// Starts the sweep; the task runs until aborted.
pub(crate) fn spawn(
    service: Service,
    tenants: Option<Arc<dyn TenantStore>>,
    nodes: Option<Arc<dyn NodeRegistry>>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    crate::every::spawn(every, move || {
        let (service, tenants, nodes) = (service.clone(), tenants.clone(), nodes.clone());
        async move { sweep_once(&service, tenants.as_deref(), nodes.as_deref()).await }
    })
}

/// One sweep of every active tenant. A registry or store that cannot answer skips this round (logged); the next
/// one tries again.
async fn sweep_once(service: &Service, tenants: Option<&dyn TenantStore>, nodes: Option<&dyn NodeRegistry>) {
    let ids = match palaver_service::backbone::active_tenants(tenants).await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "call sweep: the tenants cannot be listed");
            return;
        }
    };
    let live = match nodes {
        None => None,
        Some(registry) => match registry.live_nodes().await {
            // A list without this very node is not the cluster's (Redis lost the claims, a failover): until the
            // heartbeats restore them, no node is judged dead by it.
            Ok(live) if live.iter().any(|n| *n == service.config().node_id) => Some(live),
            Ok(_) => {
                tracing::debug!("call sweep: the live node list lacks this node; judging no node dead");
                None
            }
            // Without the list, no remote node can be judged dead; the timeouts still apply.
            Err(e) => {
                tracing::warn!(error = %e, "call sweep: the live nodes cannot be listed");
                None
            }
        },
    };
    for tenant in ids {
        match service.sweep_calls(tenant, live.as_deref()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(%tenant, ended = n, "call sweep ended calls whose node was gone"),
            Err(e) => tracing::warn!(%tenant, error = %e, "call sweep failed"),
        }
    }
}
