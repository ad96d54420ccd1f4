//! The push filters (plugins' `before-push`) on the worker's path: one call per recipient, after the dedup claim
//! and before the send, that keeps, drops, delays or rewrites the push.
//!
//! **Per recipient**, not per task: the decision is per user (their quiet hours, whether they were mentioned),
//! and it is dwarfed by what follows it, one provider request per device (tens of milliseconds) against a
//! filter call of microseconds (a warm instance), so batching the recipients would save nothing that shows while
//! making every filter match decisions to a list. No call at all is made when no filter is enabled for the tenant.
//!
//! **Fail-open.** A filter that faults (trap, fuel, deadline, malformed output) or whose breaker is open keeps the
//! push: a push is a convenience, and a broken filter must not silence a tenant's notifications. The runtime
//! counts the fault (`palaver_plugin_faults_total{hook="before-push"}`), the worker counts the outcome
//! (`palaver_push_filtered_total`).
//!
//! **Delay** never blocks the queue: the push (task, recipient, the message as the filter left it) is stored in
//! the tenant's store with its due time, capped at `push.max_delay_ms`, and the task's offset is committed; the
//! worker's delay poller ([`super::delayed`]) sends it when due, on whichever node claims it first, so a node
//! stopping loses none (the dedup claim keeps a redelivered task from sending it early). At most
//! `push.max_delayed` wait per tenant; beyond that, or when the store cannot take it, the push goes out at once
//! (counted as `delay_overflow`).

use super::PushWorker;
use palaver_core::ports::{DelayedPush, Delivery, Device, PushContext, PushDecision, PushMessage, PushTask};
use palaver_core::{StoreResult, TopicKind, UserId};

/// What the worker does with one recipient's push after the filters.
pub(super) enum Filtered {
    /// Send this now.
    Send(PushMessage),
    /// Nothing to do now: dropped, or handed to a timer.
    Done,
}

impl PushWorker {
    /// Runs the tenant's push filters on `msg` for `recipient`'s `devices`.
    pub(super) async fn filter(
        &self,
        task: &PushTask,
        recipient: UserId,
        devices: &[Device],
        msg: PushMessage,
        _delivery: &Delivery,
    ) -> Filtered {
        let hook = &self.service.inner.ports.push_hook;
        if !hook.filters(task.tenant) {
            return Filtered::Send(msg);
        }
        let kind = if task.topic.starts_with("p2p") { TopicKind::P2p } else { TopicKind::Group };
        let mut platforms: Vec<String> = devices.iter().map(|d| d.platform.clone()).collect();
        platforms.sort();
        platforms.dedup();
        let ctx = PushContext { task, recipient, kind, platforms, message: &msg };
        let state = self.state();
        match hook.before_push(&ctx).await {
            PushDecision::Keep => {
                state.filtered("keep");
                Filtered::Send(msg)
            }
            PushDecision::Rewrite(new) => {
                state.filtered("rewrite");
                Filtered::Send(new)
            }
            PushDecision::Drop { reason } => {
                state.filtered("drop");
                tracing::debug!(tenant = %task.tenant, topic = %task.topic, seq = task.seq, %recipient, %reason,
                    "push dropped by a filter");
                Filtered::Done
            }
            PushDecision::Delay { ms, rewrite } => {
                let cfg = &self.service.inner.cfg.push;
                let wait = i64::try_from(ms.min(cfg.max_delay_ms)).unwrap_or(i64::MAX);
                let message = rewrite.unwrap_or_else(|| msg.clone());
                let push = DelayedPush { task: task.clone(), recipient, message };
                match self.delay(&push, palaver_core::now_millis().saturating_add(wait)).await {
                    Ok(true) => {
                        state.filtered("delay");
                        Filtered::Done
                    }
                    Ok(false) => {
                        state.filtered("delay_overflow");
                        Filtered::Send(msg)
                    }
                    Err(err) => {
                        tracing::warn!(%err, topic = %task.topic, seq = task.seq, "delayed push not stored; sent now");
                        state.filtered("delay_overflow");
                        Filtered::Send(msg)
                    }
                }
            }
        }
    }
}

impl PushWorker {
    /// Stores `push` until `due_at`, unless the tenant has `push.max_delayed` waiting already (false).
    async fn delay(&self, push: &DelayedPush, due_at: i64) -> StoreResult<bool> {
        let devices = &self.service.inner.ports.devices;
        let tenant = push.task.tenant;
        if devices.count_delayed(tenant).await? >= self.service.inner.cfg.push.max_delayed as u64 {
            return Ok(false);
        }
        devices.put_delayed(tenant, due_at, push).await?;
        Ok(true)
    }
}
