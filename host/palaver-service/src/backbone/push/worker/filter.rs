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
//! **Delay** never blocks the queue: the delayed send is a timer task of its own, capped at `push.max_delay_ms`,
//! with at most `push.max_delayed` waiting per node; beyond that the push goes out at once (counted as
//! `delay_overflow`). The task's offset is committed meanwhile, so a delayed push still waiting when the node
//! stops is lost (the dedup claim keeps a redelivery from sending it early instead): the queue has no
//! deliver-after, and re-producing the task until it is due would spin on the partition.

use super::PushWorker;
use palaver_core::ports::{Delivery, Device, PushContext, PushDecision, PushMessage, PushTask};
use palaver_core::{TopicKind, UserId};
use std::time::Duration;

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
        delivery: &Delivery,
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
                let wait = Duration::from_millis(ms.min(cfg.max_delay_ms));
                let Some(permit) = state.delay_permit() else {
                    state.filtered("delay_overflow");
                    return Filtered::Send(msg);
                };
                state.filtered("delay");
                let msg = rewrite.unwrap_or(msg);
                let (worker, task, devices, delivery) =
                    (self.clone(), task.clone(), devices.to_vec(), delivery.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    tokio::time::sleep(wait).await;
                    for device in &devices {
                        if let Err(err) = worker.send(&task, device, &msg, &delivery).await {
                            tracing::warn!(%err, topic = %task.topic, seq = task.seq, "delayed push not sent");
                        }
                    }
                });
                Filtered::Done
            }
        }
    }
}
