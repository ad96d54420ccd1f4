//! One plugin call as the registry makes it: consult the breaker, resolve the tenant's settings, run the hook on
//! the version the call pinned, commit the buffered effects if it succeeded, and count everything. A fault is
//! logged and counted here; what it means for the message or command is the caller's failure policy.

use crate::bindings::{
    EventText, account_event, file_info, join_info, login_info, on_command, publish_context, published_message,
    push_info,
};
use crate::breaker::Admission;
use crate::error::{Fault, FaultKind};
use crate::hooks::CommandOutcome;
use crate::instance::Done;
use crate::kv::KvError;
use crate::manifest::Hook;
use crate::metrics::Outcome;
use crate::registry::{PluginRegistry, Slot};
use crate::settings::resolve;
use crate::store::{CallScope, EffectBuffer};
use crate::version::PluginVersion;
use palaver_core::ports::{
    GateVerdict, JoinContext, LoginContext, PluginEvent, PublishContext, PublishVerdict, PushContext, PushDecision,
    ScanContext, ScanVerdict,
};
use palaver_core::{AccessMode, TenantId};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// How one plugin call ended.
#[derive(Debug)]
pub(crate) enum Ran<T> {
    Done(T),
    /// The call faulted (counted and logged already); the kind says how.
    Failed(FaultKind),
    /// The breaker is open; the plugin was not called.
    Skipped,
}

/// How many times a call runs when its key-value writes keep meeting concurrent ones.
const KV_ATTEMPTS: u32 = 4;

/// Why a finished call's effects were not applied.
enum Uncommitted {
    /// A key it read changed under it: running it again may succeed.
    Conflict(Fault),
    Fault(Fault),
}

/// What the booking of a finished call needs to know about it.
struct Call<'a> {
    slot: &'a Slot,
    v: &'a PluginVersion,
    hook: Hook,
    tenant: TenantId,
    admission: Admission,
    started: Instant,
}

/// The verdict counter's name for a gate's answer.
fn gate_outcome(v: &GateVerdict) -> Outcome {
    match v {
        GateVerdict::Allow => Outcome::Allow,
        GateVerdict::Reject { .. } => Outcome::Reject,
        GateVerdict::Restrict { .. } => Outcome::Restrict,
    }
}

/// Asks the breaker whether `hook` may run for `tenant` and counts the answer: `None` when it is skipped, else
/// the admission (a call, or the trial after a cool-down) and the call's start.
fn begin(slot: &Slot, hook: Hook, tenant: TenantId) -> Option<(Admission, Instant)> {
    let m = slot.metrics.hook(hook);
    let admission = slot.breaker.admit(tenant);
    if admission == Admission::Skip {
        m.skipped.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    m.calls.fetch_add(1, Ordering::Relaxed);
    Some((admission, Instant::now()))
}

impl PluginRegistry {
    /// The latest fault of a call into plugin `name` (`<version> <hook>: <kind>: <message>`; a panic's message
    /// comes first when the plugin grants `log`), or `None` if no call faulted or there is no such plugin.
    pub fn last_fault(&self, name: &str) -> Option<String> {
        self.slot(name).ok()?.metrics.last_fault.lock().clone()
    }

    /// The scope of one run of a call; `http_sent` counts the call's outbound requests across its runs.
    fn scope(&self, v: &PluginVersion, hook: Hook, tenant: TenantId, http_sent: &Arc<AtomicU32>) -> CallScope {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let generation = self.tenants.generation();
        let settings = v.settings_cache.get_or(tenant, generation, || {
            Value::Object(resolve(&v.manifest.settings, self.tenants.settings(tenant, &v.manifest.name).as_ref()))
                .to_string()
        });
        CallScope {
            tenant,
            plugin: v.name.clone(),
            version: v.version.clone(),
            request_id: format!("{}-{n:x}", self.rt.config.node),
            settings,
            services: self.rt.services.clone(),
            max_host_calls: v.limits(hook).max_host_calls,
            max_effects: self.rt.config.max_effects,
            max_log_bytes: self.rt.config.max_log_bytes,
            kv_quota: self.rt.config.kv_quota,
            http: self.http_scope(v, tenant, http_sent),
        }
    }

    /// What a call of `v` for `tenant` may reach over HTTP: the manifest's policy narrowed by the tenant's list.
    fn http_scope(
        &self,
        v: &PluginVersion,
        tenant: TenantId,
        http_sent: &Arc<AtomicU32>,
    ) -> Option<crate::http::HttpScope> {
        let policy = v.http.clone()?;
        let metrics = self.slot(&v.manifest.name).ok()?.metrics.http.clone();
        Some(crate::http::HttpScope {
            policy,
            tenant: self.tenants.http_allow(tenant, &v.manifest.name),
            client: self.rt.http.clone(),
            metrics,
            sent: http_sent.clone(),
        })
    }

    /// Applies a successful call's effects: key-value writes first (a conflict fails the attempt), then events
    /// and notifications (a delivery failure is logged and counted; the verdict stands).
    async fn commit(&self, slot: &Slot, tenant: TenantId, effects: EffectBuffer) -> Result<(), Uncommitted> {
        if effects.is_empty() {
            return Ok(());
        }
        let scope = crate::kv::KvScope { tenant, plugin: &slot.name };
        match self.rt.services.kv.commit(scope, &effects.kv_ops, &self.rt.config.kv_quota).await {
            Ok(()) => {}
            // Each write was checked against the quota during the call; a concurrent call got there first.
            Err(KvError::Quota(m)) => return Err(Uncommitted::Fault(Fault::new(FaultKind::KvQuota, m))),
            Err(KvError::Conflict(key)) => {
                let fault = Fault::new(FaultKind::Conflict, format!("key {key:?} changed during the call"));
                return Err(Uncommitted::Conflict(fault));
            }
            Err(KvError::Unavailable(m)) => {
                return Err(Uncommitted::Fault(Fault::new(FaultKind::Conflict, format!("kv unavailable: {m}"))));
            }
        }
        let sink = &self.rt.services.effects;
        for e in effects.events {
            if let Err(err) = sink.emit(tenant, e).await {
                slot.metrics.effect_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(plugin = %slot.name, error = %err, "plugin event not delivered");
            }
        }
        for n in effects.notifications {
            if let Err(err) = sink.notify(tenant, n).await {
                slot.metrics.effect_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(plugin = %slot.name, error = %err, "plugin notification not delivered");
            }
        }
        Ok(())
    }

    /// Books a finished call: breaker, counters, latency, the fault log line. A listener's `err` is an answer, not a
    /// fault (no fault counter, no `last_fault`), but it counts towards the breaker as a failure: a tenant whose
    /// receiver is down trips its breaker instead of having every event tried against it.
    async fn finish<T>(
        &self,
        call: Call<'_>,
        result: Result<(T, u64), Fault>,
        outcome: impl Fn(&T) -> Outcome,
    ) -> Ran<T> {
        let Call { slot, v, hook, tenant, admission, started } = call;
        let m = slot.metrics.hook(hook);
        m.latency.observe(started.elapsed());
        match result {
            Ok((value, fuel)) => {
                let answer = outcome(&value);
                slot.breaker.record(tenant, admission, answer != Outcome::Err);
                m.fuel.fetch_add(fuel, Ordering::Relaxed);
                m.outcome(answer);
                Ran::Done(value)
            }
            Err(fault) => {
                slot.breaker.record(tenant, admission, false);
                m.fault(fault.kind);
                *slot.metrics.last_fault.lock() = Some(format!("{} {hook}: {fault}", v.version));
                tracing::warn!(
                    plugin = %slot.name, version = %v.version, %hook, %tenant, kind = fault.kind.as_str(),
                    error = %fault.message, "plugin call failed; its instance was discarded"
                );
                Ran::Failed(fault.kind)
            }
        }
    }

    /// Runs a call of `hook` on `v` for `tenant` and commits its effects; `run` makes one run in the scope it is
    /// given. A call whose key-value writes met a concurrent call's (another instance, another node) runs again on
    /// the new state, up to [`KV_ATTEMPTS`] times, as an optimistic transaction does: its effects were only
    /// buffered, so nothing of the losing run was applied. Its outbound HTTP requests are not buffered: a rerun may
    /// send them again, and so the runs share one count against `[http] max_requests`. Returns the value and the
    /// fuel of every run.
    async fn committed<T, F, Fut>(
        &self,
        slot: &Slot,
        v: &PluginVersion,
        hook: Hook,
        tenant: TenantId,
        mut run: F,
    ) -> Result<(T, u64), Fault>
    where
        F: FnMut(CallScope) -> Fut,
        Fut: std::future::Future<Output = Result<Done<T>, Fault>>,
    {
        let http_sent = Arc::new(AtomicU32::new(0));
        let mut fuel = 0;
        for attempt in 1.. {
            let done = run(self.scope(v, hook, tenant, &http_sent)).await?;
            fuel += done.fuel;
            match self.commit(slot, tenant, done.effects).await {
                Ok(()) => return Ok((done.value, fuel)),
                Err(Uncommitted::Conflict(_)) if attempt < KV_ATTEMPTS => {
                    slot.metrics.kv_retries.fetch_add(1, Ordering::Relaxed);
                }
                Err(Uncommitted::Conflict(f) | Uncommitted::Fault(f)) => return Err(f),
            }
        }
        unreachable!("the loop returns")
    }

    /// Runs one plugin's `before-publish` on the version `v` the caller pinned.
    pub(crate) async fn run_publish(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &PublishContext,
        content: &str,
        head: Option<&str>,
    ) -> Ran<PublishVerdict> {
        let Some((admission, started)) = begin(slot, Hook::BeforePublish, ctx.tenant) else {
            return Ran::Skipped;
        };
        let result = self
            .committed(slot, v, Hook::BeforePublish, ctx.tenant, |scope| {
                let wit = publish_context(ctx, scope.request_id.clone());
                async move { v.judge(&self.rt, scope, &wit, content, head).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::BeforePublish, tenant: ctx.tenant, admission, started };
        self.finish(call, result, |verdict| match verdict {
            PublishVerdict::Allow => Outcome::Allow,
            PublishVerdict::Reject { .. } => Outcome::Reject,
            PublishVerdict::Rewrite { .. } => Outcome::Rewrite,
            PublishVerdict::Hold { .. } => Outcome::Hold,
        })
        .await
    }

    /// Runs one plugin's `before-push` on the version `v` the caller pinned, on `msg` (the push as the plugins
    /// before it left it).
    pub(crate) async fn run_push(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &PushContext<'_>,
        msg: &palaver_core::ports::PushMessage,
    ) -> Ran<PushDecision> {
        let tenant = ctx.task.tenant;
        let Some((admission, started)) = begin(slot, Hook::BeforePush, tenant) else {
            return Ran::Skipped;
        };
        let result = self
            .committed(slot, v, Hook::BeforePush, tenant, |scope| {
                let current = PushContext { message: msg, ..ctx.clone() };
                let wit = push_info(&current, &self.rt.config.node, scope.request_id.clone());
                async move { v.filter(&self.rt, scope, &wit, msg).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::BeforePush, tenant, admission, started };
        self.finish(call, result, |d| match d {
            PushDecision::Keep => Outcome::Keep,
            PushDecision::Drop { .. } => Outcome::Drop,
            PushDecision::Delay { .. } => Outcome::Delay,
            PushDecision::Rewrite(_) => Outcome::Rewrite,
        })
        .await
    }

    /// Runs one plugin's `scan-file` on the version `v` the caller pinned.
    pub(crate) async fn run_scan(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &ScanContext<'_>,
    ) -> Ran<ScanVerdict> {
        let Some((admission, started)) = begin(slot, Hook::ScanFile, ctx.tenant) else {
            return Ran::Skipped;
        };
        let result = self
            .committed(slot, v, Hook::ScanFile, ctx.tenant, |scope| {
                let wit = file_info(ctx, &self.rt.config.node, scope.request_id.clone());
                async move { v.scan_file(&self.rt, scope, &wit).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::ScanFile, tenant: ctx.tenant, admission, started };
        self.finish(call, result, |verdict| match verdict {
            ScanVerdict::Clean => Outcome::Clean,
            ScanVerdict::Blocked { .. } => Outcome::Blocked,
            ScanVerdict::Review { .. } => Outcome::Review,
        })
        .await
    }

    /// Runs one plugin's `on-login` on the version `v` the caller pinned.
    pub(crate) async fn run_login(&self, slot: &Slot, v: &Arc<PluginVersion>, ctx: &LoginContext) -> Ran<GateVerdict> {
        let Some((admission, started)) = begin(slot, Hook::OnLogin, ctx.tenant) else {
            return Ran::Skipped;
        };
        let result = self
            .committed(slot, v, Hook::OnLogin, ctx.tenant, |scope| {
                let wit = login_info(ctx, &self.rt.config.node, scope.request_id.clone());
                async move { v.login(&self.rt, scope, &wit).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::OnLogin, tenant: ctx.tenant, admission, started };
        self.finish(call, result, gate_outcome).await
    }

    /// Runs one plugin's `before-subscribe` on the version `v` the caller pinned, on the join with mode `given`
    /// (as the gates before it left it).
    pub(crate) async fn run_join(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &JoinContext,
        given: AccessMode,
    ) -> Ran<GateVerdict> {
        let Some((admission, started)) = begin(slot, Hook::BeforeSubscribe, ctx.tenant) else {
            return Ran::Skipped;
        };
        let text = given.to_string();
        let result = self
            .committed(slot, v, Hook::BeforeSubscribe, ctx.tenant, |scope| {
                let wit = join_info(ctx, &text, &self.rt.config.node, scope.request_id.clone());
                async move { v.join(&self.rt, scope, &wit, given).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::BeforeSubscribe, tenant: ctx.tenant, admission, started };
        self.finish(call, result, gate_outcome).await
    }

    /// Runs one plugin's listener hook for `event` (`after-publish` or `on-account`) on the version `v` the
    /// caller pinned; `text` is the event's JSON, serialised once for every listener.
    pub(crate) async fn run_listener(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        event: &PluginEvent,
        text: &EventText,
        attempt: u32,
    ) -> Ran<Result<(), String>> {
        let (tenant, hook) = (event.tenant(), crate::listeners::hook_of(event.kind()));
        let Some((admission, started)) = begin(slot, hook, tenant) else {
            return Ran::Skipped;
        };
        let node = &self.rt.config.node;
        let result = self
            .committed(slot, v, hook, tenant, |scope| {
                let id = scope.request_id.clone();
                let (msg, acc) = (
                    published_message(event, text, attempt, node, id.clone()),
                    account_event(event, text, attempt, node, id),
                );
                async move {
                    match (msg, acc) {
                        (Some(m), _) => v.after_publish(&self.rt, scope, &m).await,
                        (None, Some(a)) => v.on_account(&self.rt, scope, &a).await,
                        (None, None) => Err(Fault::new(FaultKind::Instantiate, "the event and its text disagree")),
                    }
                }
            })
            .await;
        let call = Call { slot, v, hook, tenant, admission, started };
        self.finish(call, result, |r| if r.is_ok() { Outcome::Ok } else { Outcome::Err }).await
    }

    /// Runs one plugin's `on-command` on the version `v` the caller pinned.
    pub(crate) async fn run_command_on(
        &self,
        slot: &Slot,
        v: &Arc<PluginVersion>,
        ctx: &crate::hooks::CommandContext,
        name: &str,
        args: &str,
    ) -> Ran<CommandOutcome> {
        let Some((admission, started)) = begin(slot, Hook::OnCommand, ctx.tenant) else {
            return Ran::Skipped;
        };
        let result = self
            .committed(slot, v, Hook::OnCommand, ctx.tenant, |scope| {
                let wit = on_command::CallContext {
                    tenant: ctx.tenant.0,
                    actor: ctx.actor.to_string(),
                    session: ctx.session.clone(),
                    node: if ctx.node.is_empty() { self.rt.config.node.clone() } else { ctx.node.clone() },
                    request_id: scope.request_id.clone(),
                };
                async move { v.handle(&self.rt, scope, &wit, name, args).await }
            })
            .await;
        let call = Call { slot, v, hook: Hook::OnCommand, tenant: ctx.tenant, admission, started };
        self.finish(call, result, |o| match o {
            CommandOutcome::Ok(_) => Outcome::Ok,
            CommandOutcome::Rejected { .. } => Outcome::Rejected,
        })
        .await
    }
}
