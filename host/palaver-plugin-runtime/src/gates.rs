//! The gates: [`PluginHooks`] as palaver-core's `GateHook` port, over the plugins' `on-login` and
//! `before-subscribe`. Every plugin enabled for the tenant that exports the hook runs in priority order, on the
//! version the tenant runs (a canary's tenants run the canary). The first reject wins; restrictions chain (each gate
//! sees the mode as the gates before it narrowed it, and may only narrow it further); a faulted or skipped gate
//! answers with its failure policy for the tenant: closed (the default) refuses with a retryable 503
//! `PLUGIN_UNAVAILABLE`, open lets the login or join go on as that gate had allowed it.

use crate::dispatch::Ran;
use crate::hooks::PluginHooks;
use crate::manifest::{FailurePolicy, Hook};
use crate::registry::Slot;
use crate::version::PluginVersion;
use palaver_api::Reason;
use palaver_core::ports::{GateHook, GateVerdict, JoinContext, LoginContext};
use palaver_core::{AccessMode, TenantId};
use std::sync::Arc;

impl PluginHooks {
    /// The plugins that run `hook` for `tenant`, in priority order, each with the version the tenant runs.
    pub(crate) fn running(&self, tenant: TenantId, hook: Hook) -> Vec<(Arc<Slot>, Arc<PluginVersion>)> {
        let registry = self.registry();
        registry
            .order
            .load_full()
            .iter()
            .filter_map(|slot| {
                let v = slot.version_for(tenant)?;
                let on = v.manifest.has_hook(hook)
                    && registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default);
                on.then(|| (slot.clone(), v))
            })
            .collect()
    }

    /// Whether any plugin runs `hook` for `tenant`: a lookup, no call, no allocation.
    pub(crate) fn any_runs(&self, tenant: TenantId, hook: Hook) -> bool {
        let registry = self.registry();
        registry.order.load_full().iter().any(|slot| {
            slot.version_for(tenant).is_some_and(|v| {
                v.manifest.has_hook(hook) && registry.tenants.enabled(tenant, &slot.name, v.manifest.enabled_by_default)
            })
        })
    }

    /// What a faulted or skipped gate answers: `None` to go on (open), else the retryable refusal (closed).
    fn gate_failed(&self, slot: &Slot, v: &PluginVersion, hook: Hook, tenant: TenantId) -> Option<GateVerdict> {
        match self.registry().policy_for(slot, v, hook, tenant) {
            FailurePolicy::Open => None,
            FailurePolicy::Closed => {
                let what = if hook == Hook::OnLogin { "login" } else { "join" };
                Some(GateVerdict::Reject {
                    code: Reason::PluginUnavailable.status(),
                    reason: format!("{what} check {} is unavailable; try again later", slot.name),
                })
            }
        }
    }
}

#[async_trait::async_trait]
impl GateHook for PluginHooks {
    fn gates_login(&self, tenant: TenantId) -> bool {
        self.any_runs(tenant, Hook::OnLogin)
    }

    fn gates_join(&self, tenant: TenantId) -> bool {
        self.any_runs(tenant, Hook::BeforeSubscribe)
    }

    async fn on_login(&self, ctx: &LoginContext) -> GateVerdict {
        for (slot, v) in self.running(ctx.tenant, Hook::OnLogin) {
            match self.registry().run_login(&slot, &v, ctx).await {
                Ran::Done(GateVerdict::Allow) => {}
                Ran::Done(verdict) => return verdict,
                Ran::Failed(_) | Ran::Skipped => {
                    if let Some(refusal) = self.gate_failed(&slot, &v, Hook::OnLogin, ctx.tenant) {
                        return refusal;
                    }
                }
            }
        }
        GateVerdict::Allow
    }

    /// A restriction is answered only when the mode changed: a gate that restricts to the whole of `given` allowed.
    async fn before_subscribe(&self, ctx: &JoinContext) -> GateVerdict {
        // The host's `given` is well-formed; were it not, no restriction could fit it and each would be a fault.
        let original = AccessMode::parse(&ctx.given).ok().flatten().unwrap_or(AccessMode::NONE);
        let mut given = original;
        for (slot, v) in self.running(ctx.tenant, Hook::BeforeSubscribe) {
            match self.registry().run_join(&slot, &v, ctx, given).await {
                Ran::Done(GateVerdict::Allow) => {}
                Ran::Done(GateVerdict::Restrict { mode }) => {
                    // Checked against `given` when the call returned, so it parses and only narrows.
                    given = AccessMode::parse(&mode).ok().flatten().map_or(given, |m| m.and(given));
                }
                Ran::Done(reject) => return reject,
                Ran::Failed(_) | Ran::Skipped => {
                    if let Some(refusal) = self.gate_failed(&slot, &v, Hook::BeforeSubscribe, ctx.tenant) {
                        return refusal;
                    }
                }
            }
        }
        if given == original { GateVerdict::Allow } else { GateVerdict::Restrict { mode: given.to_string() } }
    }
}
