//! Events for the listening plugins (`after-publish`, `on-account`). A stored message becomes a
//! [`PluginEvent::Published`] handed to a [`lane`](super::lane) without waiting, as a push task is; an account
//! change becomes a [`PluginEvent::Account`] written to the tenant's outbox (rare, and not on a hot path). Either
//! way the relay (or the embedded queue) takes it to `im.plugin.event`, where one consumer group across the nodes,
//! the [`EventWorker`], delivers it. Nothing is made while no plugin listens for the tenant.
//!
//! **At least once, from the queue.** The worker commits an event after every listener took it, or after the
//! failed ones were retried `max_attempts` times with backoff and the event went to the dead-letter topic naming
//! them and their reasons. A retry goes only to the listeners that failed; a listener whose circuit breaker is
//! open for the tenant gets its dead letter at once, so a tenant's broken receiver holds the others' events for
//! no more than its breaker's threshold of calls. A node dying mid-delivery hands the event out again, to every
//! listener: plugins drop repeats by `(topic, seq)` or the account event's id.
//!
//! **Before the queue.** An account event commits with its change where the store takes records in the change's
//! transaction (a suspension, a deletion), else it is written to the outbox right after the change, and a crash in
//! between loses it. A message event waits in a bounded in-memory buffer as a push task does: a full buffer or a
//! crash loses it (`palaver_listener_events_dropped_total` counts the first).

use super::lane::{Lane, Packed, Queued};
use crate::{Inner, Service};
use palaver_core::ports::{
    AccountChange, Delivery, ListenerFailure, ListenerKind, PluginEvent, QueueRecord, QueueTopic, TaskQueue,
};
use palaver_core::{Message, StoreResult, TenantId, UserId};
use prometheus_client::metrics::counter::Counter;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Produces of one dead letter before the worker gives up on it (and joins again).
const DEAD_LETTER_ATTEMPTS: u32 = 3;

/// Settings of the event path (`[plugins.events]`).
#[derive(Debug, Clone)]
pub struct EventConfig {
    /// Message events waiting between the publish path and the outbox; beyond it new ones are dropped and counted.
    pub buffer: usize,
    /// Deliveries to a failing listener before the event is dead-lettered for it.
    pub max_attempts: u32,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

impl Default for EventConfig {
    fn default() -> Self {
        EventConfig {
            buffer: 10_000,
            max_attempts: 5,
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(5),
        }
    }
}

/// The record an event travels in: keyed by tenant and topic (or user), so the events of one conversation share a
/// partition. That keeps them in the order they were produced, which for messages of one topic published at once
/// (or on two nodes) need not be seq order: listeners order by `seq`.
pub fn event_record(event: &PluginEvent) -> QueueRecord {
    let target = match event {
        PluginEvent::Published { topic, .. } => topic.clone(),
        PluginEvent::Account { user, .. } => user.to_string(),
    };
    let key = format!("{}:{target}", event.tenant().0);
    let mut record = QueueRecord::new(QueueTopic::PluginEvent, key, serde_json::to_vec(event).unwrap_or_default());
    record.headers = vec![("tenant".to_owned(), event.tenant().0.to_string())];
    record
}

impl Queued for PluginEvent {
    fn pack(items: std::vec::Drain<'_, Self>) -> Vec<Packed> {
        items.map(|event| Packed { tenant: event.tenant(), record: event_record(&event), items: 1 }).collect()
    }
}

/// The event path's buffer and counters.
pub struct EventState {
    pub(crate) lane: Lane<PluginEvent>,
    delivered: Counter,
    retried: Counter,
    dead_lettered: Counter,
}

/// The buffer's two ends: the state keeps the sender, [`super::lane::drain`] gets the receiver.
pub(crate) fn buffer(cfg: &EventConfig) -> (Arc<EventState>, mpsc::Receiver<PluginEvent>) {
    let (lane, rx) = Lane::new(cfg.buffer);
    let state = EventState {
        lane,
        delivered: Counter::default(),
        retried: Counter::default(),
        dead_lettered: Counter::default(),
    };
    (Arc::new(state), rx)
}

impl EventState {
    /// Events every listener took, for tests.
    pub fn delivered(&self) -> u64 {
        self.delivered.get()
    }

    /// Events dead-lettered for a listener, for tests.
    pub fn dead_lettered(&self) -> u64 {
        self.dead_lettered.get()
    }
}

impl palaver_core::MetricsSource for EventState {
    fn register(&self, r: &mut palaver_core::Registry) {
        let counters: [(&str, &str, &Counter); 5] = [
            ("palaver_listener_events_made", "Plugin events handed to the buffer or the outbox", &self.lane.offered),
            (
                "palaver_listener_events_dropped",
                "Message events lost: the buffer was full or the outbox refused them",
                &self.lane.dropped,
            ),
            ("palaver_listener_events_delivered", "Plugin events every listener took", &self.delivered),
            (
                "palaver_listener_events_retried",
                "Deliveries of a plugin event again to the listeners that failed",
                &self.retried,
            ),
            (
                "palaver_listener_events_dead_lettered",
                "Plugin events a listener failed for good, recorded on the dead-letter topic",
                &self.dead_lettered,
            ),
        ];
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
    }
}

impl Inner {
    /// Hands an event for `msg` (stored, not held) to the buffer, without waiting; nothing when no plugin listens.
    pub(crate) fn enqueue_published(&self, tenant: TenantId, msg: &Message) {
        if !self.ports.listeners.listens(tenant, ListenerKind::Published) {
            return;
        }
        self.events.lane.offer(PluginEvent::Published {
            tenant,
            topic: msg.topic.clone(),
            seq: msg.seq,
            ts: msg.created,
            from: msg.from,
            content: msg.content.clone(),
            head: msg.head.clone(),
        });
    }

    /// The record telling the listening plugins that `user`'s account changed (by `actor`, `None` for an
    /// operator), for the caller to commit with the change where it can; `None` when no plugin listens. The
    /// account's public profile and tags are read now (none once deleted), so call it after a profile change and
    /// before or after a state change. Counted as made.
    pub(crate) async fn account_event(
        &self,
        tenant: TenantId,
        user: UserId,
        actor: Option<UserId>,
        change: AccountChange,
    ) -> Option<QueueRecord> {
        if !self.ports.listeners.listens(tenant, ListenerKind::Account) {
            return None;
        }
        let (public, tags) = match change {
            AccountChange::Deleted => (None, Vec::new()),
            _ => match self.ports.users.get_user(tenant, user).await {
                Ok(Some(u)) => (u.public, u.tags),
                Ok(None) => (None, Vec::new()),
                Err(err) => {
                    tracing::warn!(%tenant, %err, "account event without its profile: the account could not be read");
                    (None, Vec::new())
                }
            },
        };
        let id = super::new_event_id();
        let ts = palaver_core::now_millis();
        self.events.lane.offered.inc();
        Some(event_record(&PluginEvent::Account { tenant, id, user, actor, change, ts, public, tags }))
    }

    /// [`Inner::account_event`] written to the tenant's outbox right after a change that could not carry it in
    /// its own transaction: a crash between the two loses the event (counted as dropped when the outbox refuses).
    pub(crate) async fn account_changed(
        &self,
        tenant: TenantId,
        user: UserId,
        actor: Option<UserId>,
        change: AccountChange,
    ) {
        let Some(record) = self.account_event(tenant, user, actor, change).await else { return };
        if let Err(err) = self.put_outbox(tenant, &[record]).await {
            self.events.lane.dropped.inc();
            tracing::warn!(%tenant, %err, "account event not written to the outbox");
        }
    }
}

/// The plugin-event topic's consumer.
#[derive(Clone)]
pub struct EventWorker {
    service: Service,
    queue: Arc<dyn TaskQueue>,
    group: String,
}

impl EventWorker {
    /// A worker in consumer group `group`, retrying as the service's `[plugins.events]` says.
    pub fn new(service: Service, queue: Arc<dyn TaskQueue>, group: String) -> EventWorker {
        EventWorker { service, queue, group }
    }

    /// Runs the consumer; aborting the handle stops it.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }

    /// Consumes until the task is aborted, joining the group again after a queue failure.
    pub async fn run(self) {
        super::keep_consuming("plugin-event worker", &self.group, || self.consume()).await;
    }

    async fn consume(&self) -> StoreResult<()> {
        let mut consumer = self.queue.subscribe(QueueTopic::PluginEvent, &self.group).await?;
        loop {
            let delivery = consumer.next().await?;
            self.handle(&delivery).await?;
            if let Err(err) = consumer.commit(&delivery).await {
                tracing::warn!(%err, offset = delivery.offset, "plugin-event worker: commit failed; the event will repeat");
            }
        }
    }

    /// Delivers one event, retrying the listeners that failed. `Err` only when the dead-letter topic refused the
    /// record (the event is then not committed and comes back).
    async fn handle(&self, delivery: &Delivery) -> StoreResult<()> {
        let Some(event) = read_event(&delivery.record) else {
            return self.dead_letter(delivery, "unreadable plugin event", &[]).await;
        };
        let inner = &self.service.inner;
        let cfg = &inner.cfg.events;
        let hook = &inner.ports.listeners;
        let mut wait = cfg.backoff_initial;
        let mut only: Option<Vec<String>> = None;
        let mut attempt = 1;
        loop {
            let failed = hook.deliver(&event, only.as_deref(), attempt).await;
            if failed.is_empty() {
                inner.events.delivered.inc();
                return Ok(());
            }
            // A listener whose breaker is open for the tenant was not called: waiting out a backoff for it would
            // hold every event behind this one, so it gets its dead letter now, and the rest their retries.
            let (skipped, failed): (Vec<_>, Vec<_>) = failed.into_iter().partition(|f| f.skipped);
            if !skipped.is_empty() {
                self.dead_letter(delivery, "listeners' circuit breakers are open", &skipped).await?;
            }
            if failed.is_empty() {
                return Ok(());
            }
            if attempt >= cfg.max_attempts.max(1) {
                let reason = format!("listeners failed {attempt} times");
                return self.dead_letter(delivery, &reason, &failed).await;
            }
            tracing::info!(tenant = event.tenant().0, attempt, failed = ?failed, "plugin listeners failed; trying again");
            inner.events.retried.inc();
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(cfg.backoff_max);
            attempt += 1;
            only = Some(failed.into_iter().map(|f| f.plugin).collect());
        }
    }

    /// Records an event that could not be delivered on the dead-letter topic, the reason (and the listeners that
    /// failed, with theirs) in its headers. The produce is tried a few times here: a refusal in the end makes the
    /// worker join again and the event come back to every listener.
    async fn dead_letter(&self, delivery: &Delivery, reason: &str, failed: &[ListenerFailure]) -> StoreResult<()> {
        tracing::warn!(reason, failed = ?failed, offset = delivery.offset, "plugin event sent to the dead-letter topic");
        let mut record = delivery.dead_letter(reason);
        for f in failed {
            record.headers.push((format!("dlq.plugin.{}", f.plugin), f.reason.chars().take(256).collect()));
        }
        let mut wait = Duration::from_millis(100);
        for attempt in 1..=DEAD_LETTER_ATTEMPTS {
            match self.queue.produce(record.clone()).await {
                Ok(()) => {
                    self.service.inner.events.dead_lettered.inc();
                    return Ok(());
                }
                Err(err) if attempt < DEAD_LETTER_ATTEMPTS => {
                    tracing::warn!(%err, attempt, "plugin event's dead letter not written; trying again");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// The event a record carries; `None` when the payload does not read as one or its tenant disagrees with the
/// record's `tenant` header (an event is never delivered to a tenant it was not written for).
fn read_event(record: &QueueRecord) -> Option<PluginEvent> {
    let event: PluginEvent = serde_json::from_slice(&record.payload).ok()?;
    (record.header("tenant")? == event.tenant().0.to_string()).then_some(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_with_their_tenant_checked() {
        let event = PluginEvent::Account {
            tenant: TenantId(7),
            id: "e1".into(),
            user: UserId(3),
            actor: None,
            change: AccountChange::Created,
            ts: 5,
            public: Some(serde_json::json!({"fn": "A"})),
            tags: vec!["x".into()],
        };
        let record = event_record(&event);
        assert_eq!(record.key, format!("7:{}", UserId(3)));
        assert_eq!(read_event(&record), Some(event));
        let mut forged = record.clone();
        forged.headers = vec![("tenant".into(), "8".into())];
        assert_eq!(read_event(&forged), None, "a payload naming another tenant than its header");
        forged.headers.clear();
        assert_eq!(read_event(&forged), None, "a record without its tenant header");
        let garbage = QueueRecord::new(QueueTopic::PluginEvent, "k", b"{".to_vec());
        assert_eq!(read_event(&garbage), None);
    }
}
