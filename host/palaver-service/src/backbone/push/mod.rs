//! Offline push, the publish side: after a message is stored, one [`PushTask`] is handed without waiting to a
//! bounded buffer; a background task moves the buffer into the tenant's outbox (topic `push`), and the relay
//! takes it to the queue (`im.push.task`), where the [`worker::PushWorker`] consumes it. On the embedded queue
//! the buffer drains straight into the queue instead ([`crate::Service::queue_through`]). The buffer is a
//! [`super::lane`]: the publish path never awaits any of this, and a full buffer drops the task and counts it
//! (`palaver_push_dropped_total`).
//!
//! The tasks of one topic drained together travel in one record ([`push_records`]): a row (or a Kafka message)
//! per batch of a topic rather than per message, which is most of what the publish path pays for push.

mod devices;
mod payload;
mod record;
mod state;
mod tenants;
pub mod worker;

pub use payload::{PREVIEW_CHARS, build_message, preview_of};
pub use record::{TASKS_PER_RECORD, push_records, push_tasks};
pub use state::PushState;
pub use tenants::{PUSH_SETTING, ProviderFactory, TenantPush, TenantPushes};

use super::lane::{Lane, Packed, Queued};
use crate::Inner;
use crate::names::{Resolved, resolve};
use palaver_core::ports::{PushTask, mentions_of};
use palaver_core::{Message, Seq, TenantId, UserId};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Push settings of the node (`[push]`).
#[derive(Debug, Clone)]
pub struct PushConfig {
    /// Whether stored messages make push tasks at all.
    pub enabled: bool,
    /// Whether a push carries up to 128 characters of the message's text.
    pub preview: bool,
    /// How long `push:dedup:{topic}:{seq}:{uid}` keeps a user from being pushed the same message again.
    pub dedup_ttl_ms: u64,
    /// Tasks waiting between the publish path and the outbox; beyond it new tasks are dropped and counted.
    pub buffer: usize,
    /// Devices one user may register; a registration beyond it is refused.
    pub max_devices_per_user: u64,
    /// The longest a push filter may delay a push, in milliseconds; a longer delay is cut to it.
    pub max_delay_ms: u64,
    /// Delayed pushes one tenant keeps waiting; beyond it a delayed push is sent at once.
    pub max_delayed: usize,
    /// Tenants whose push settings a node keeps loaded at most (the least recently used go first).
    pub tenant_cache: usize,
    /// How old a tenant's loaded push settings may get before the worker reads them again, in milliseconds: how
    /// long another node's admin change takes to reach this one.
    pub tenant_refresh_ms: u64,
    /// Users whose devices the worker keeps in memory when this node is the only writer of devices.
    pub device_cache: usize,
}

impl Default for PushConfig {
    fn default() -> Self {
        PushConfig {
            enabled: false,
            preview: false,
            dedup_ttl_ms: 10 * 60 * 1000,
            buffer: 10_000,
            max_devices_per_user: 16,
            max_delay_ms: 60 * 60 * 1000,
            max_delayed: 10_000,
            tenant_cache: 10_000,
            tenant_refresh_ms: 5_000,
            device_cache: devices::DEFAULT_MAX,
        }
    }
}

impl Inner {
    /// Whether the tenant's stored messages make push tasks, and whether those carry a preview: the tenant's
    /// loaded settings, or the node's while they load (the worker checks again).
    fn push_switches(&self, tenant: TenantId) -> (bool, bool) {
        if !self.cfg.push.enabled {
            return (false, false);
        }
        match self.push_tenants.peek(tenant) {
            Some(p) => (p.enabled, p.preview),
            None => self.push_tenants.node_switches(),
        }
    }

    /// Hands a push task for `msg` (stored, not held) to the buffer, without waiting.
    pub(crate) fn enqueue_push(&self, tenant: TenantId, msg: &Message, sender_device: Option<String>) {
        let (enabled, preview) = self.push_switches(tenant);
        if !enabled {
            return;
        }
        let head = msg.head.as_ref();
        let text = |k: &str| head.and_then(|h| h.get(k)).and_then(|v| v.as_str()).map(str::to_owned);
        let task = PushTask {
            tenant,
            topic: msg.topic.clone(),
            seq: msg.seq,
            from: msg.from,
            ts: msg.created,
            what: "msg".to_owned(),
            mime: text("mime"),
            webrtc: text("webrtc"),
            preview: preview.then(|| preview_of(&msg.content)).flatten(),
            attached: self.hub.attached_users(tenant, &msg.topic),
            sender_device,
            head: head.cloned(),
            mentions: mentions_of(&msg.content),
            to: None,
        };
        self.push.offer(task);
    }

    /// Hands a silent push for a read receipt to the buffer, without waiting: the reader's other devices (all
    /// but `device`, the one that read) learn that `stored` is read up to `seq`, so apps clear notifications.
    pub(crate) fn enqueue_read(
        &self,
        tenant: TenantId,
        stored: &str,
        seq: Seq,
        reader: UserId,
        device: Option<String>,
    ) {
        self.offer_silent(tenant, "read", stored, seq, (reader, reader), device);
    }

    /// Hands a silent push for a change of `user`'s subscription to `topic` (a wire or stored name as `user`
    /// sees it: created, changed or removed by `actor`) to the buffer, without waiting; `seq` is the change's
    /// Unix ms, so two changes are two pushes. A change the user made themselves pushes nothing: the acting
    /// device is not known here, and the user's other sessions learn of it from `{pres}` on `me`.
    pub(crate) fn enqueue_sub(&self, tenant: TenantId, user: UserId, topic: &str, actor: Option<UserId>) {
        if actor == Some(user) {
            return;
        }
        let stored = match resolve(topic, user) {
            Some(Resolved::Group(name)) => name,
            Some(Resolved::P2p { stored, .. }) => stored,
            _ => return,
        };
        let from = actor.unwrap_or(crate::ADMIN_ACTOR);
        self.offer_silent(tenant, "sub", &stored, crate::now_millis(), (from, user), None);
    }

    fn offer_silent(
        &self,
        tenant: TenantId,
        what: &str,
        stored: &str,
        seq: Seq,
        (from, to): (UserId, UserId),
        device: Option<String>,
    ) {
        if !self.push_switches(tenant).0 {
            return;
        }
        let task = PushTask {
            tenant,
            topic: stored.to_owned(),
            seq,
            from,
            ts: crate::now_millis(),
            what: what.to_owned(),
            mime: None,
            webrtc: None,
            preview: None,
            attached: Vec::new(),
            sender_device: device,
            head: None,
            mentions: Vec::new(),
            to: Some(to),
        };
        self.push.offer(task);
    }
}

impl Queued for PushTask {
    fn pack(items: std::vec::Drain<'_, Self>) -> Vec<Packed> {
        record::pack(items)
    }
}

/// The buffer's two ends: the state keeps the sender, [`super::lane::drain`] gets the receiver.
pub(crate) fn buffer(cfg: &PushConfig) -> (Arc<PushState>, mpsc::Receiver<PushTask>) {
    let (lane, rx) = Lane::new(cfg.buffer);
    (Arc::new(PushState::new(lane, cfg.device_cache)), rx)
}
