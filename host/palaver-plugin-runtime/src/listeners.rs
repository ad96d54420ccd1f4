//! The listeners: [`PluginHooks`] as palaver-core's `EventHook` port, over the plugins' `after-publish` and
//! `on-account`. The event worker hands each event here; every plugin enabled for the event's tenant that exports
//! the event's hook is called in priority order, on the version the tenant runs (a canary's tenants run the
//! canary), and each failure comes back named by its plugin so that the worker retries those plugins only.
//!
//! The listeners' policy is fixed: a fault fails closed, which here means a failed delivery the caller retries
//! (failing open would drop the event as if it had been taken). A listener's `err`, a trap, a breached limit and
//! a skip by an open breaker are all failures. An `err` is an answer, not a fault (it is counted as verdict `err`,
//! not in the fault counters nor `last_fault`), and the call's buffered effects are applied, as for any call that
//! returned; but it counts towards the tenant's breaker like a fault, so that a tenant whose receiver is down trips
//! it rather than having every event tried. A skip is reported with `skipped`: the worker dead-letters the event
//! for that plugin at once, since a retry within the backoff would be skipped too.

use crate::bindings::EventText;
use crate::dispatch::Ran;
use crate::hooks::PluginHooks;
use crate::manifest::Hook;
use palaver_core::TenantId;
use palaver_core::ports::{EventHook, ListenerFailure, ListenerKind, PluginEvent};

/// The hook that takes events of `kind`.
pub(crate) fn hook_of(kind: ListenerKind) -> Hook {
    match kind {
        ListenerKind::Published => Hook::AfterPublish,
        ListenerKind::Account => Hook::OnAccount,
    }
}

#[async_trait::async_trait]
impl EventHook for PluginHooks {
    fn listeners(&self, tenant: TenantId, kind: ListenerKind) -> Vec<String> {
        self.running(tenant, hook_of(kind)).into_iter().map(|(slot, _)| slot.name.clone()).collect()
    }

    fn listens(&self, tenant: TenantId, kind: ListenerKind) -> bool {
        self.any_runs(tenant, hook_of(kind))
    }

    /// A plugin named in `only` that no longer listens (unloaded, disabled for the tenant, or a version without the
    /// hook) is left out: there is nobody to deliver to, and reporting it would have the event retried for ever.
    async fn deliver(&self, event: &PluginEvent, only: Option<&[String]>, attempt: u32) -> Vec<ListenerFailure> {
        let running = self.running(event.tenant(), hook_of(event.kind()));
        let chosen: Vec<_> =
            running.into_iter().filter(|(slot, _)| only.is_none_or(|names| names.contains(&slot.name))).collect();
        if chosen.is_empty() {
            return Vec::new();
        }
        let text = EventText::of(event);
        let mut failures = Vec::new();
        for (slot, v) in chosen {
            let (reason, skipped) = match self.registry().run_listener(&slot, &v, event, &text, attempt).await {
                Ran::Done(Ok(())) => continue,
                Ran::Done(Err(reason)) => (reason, false),
                Ran::Failed(kind) => (format!("plugin {} failed: {}", slot.name, kind.as_str()), false),
                Ran::Skipped => (format!("plugin {} failed: its circuit breaker is open", slot.name), true),
            };
            failures.push(ListenerFailure { plugin: slot.name.clone(), reason, skipped });
        }
        failures
    }
}
