//! The realtime dispatcher: every delivery to sessions other than the requester's own reply is
//! an [`Event`]. The node applies it to its own sessions at once and, when other nodes exist, publishes it on
//! the realtime bus; each other node applies the very same code to its sessions. So "who on this node gets
//! what" is written once, and a two-node deployment differs from one node only in where the event came from.
//!
//! Consumer rules: drop our own loopback, drop repeats by `event_id` (bounded memory), refuse
//! an envelope whose tenant does not match, select local sessions by target, and only ever queue without
//! waiting: a full session queue drops the frame and counts it, and the client recovers by seq.

use crate::Inner;
use crate::delivery::control::session_ref;
use crate::delivery::event::{BusinessTarget, Event};
use crate::error::ServiceResult;
use palaver_core::ports::{BusSink, BusTarget, ControlScope, Envelope};
use palaver_core::{Message, RecentIds, SessionId, TenantId, UserId};
use serde_json::Value;
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

impl Inner {
    /// Applies `event` to this node's sessions (except `skip`) and publishes it for the other nodes.
    pub(crate) async fn dispatch(&self, tenant: TenantId, event: Event, skip: Option<SessionId>, from: Option<UserId>) {
        self.publish_event(tenant, &event, skip, from);
        let started = std::time::Instant::now();
        self.apply(tenant, event, skip).await;
        self.metrics.fanout_took(started.elapsed());
    }

    /// Publishes `event` for the other nodes only. Cheap when there are none: nothing is encoded.
    pub(crate) fn publish_event(&self, tenant: TenantId, event: &Event, skip: Option<SessionId>, from: Option<UserId>) {
        if !self.ports.bus.is_shared() {
            return;
        }
        let payload = match serde_json::to_string(event) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "event not encodable");
                return;
            }
        };
        let (kind, target) = event.route();
        let envelope = Envelope {
            event_id: format!("rt_{}_{:016x}", self.cfg.node_id, rand::random::<u64>()),
            tenant,
            tenant_code: None,
            kind,
            target,
            from,
            source_node: self.cfg.node_id.clone(),
            skip_session: skip.map(|s| s.to_string()),
            dedup_key: event.dedup_key(),
            occurred_at: crate::now_millis(),
            payload,
        };
        let ok = self.ports.bus.publish(envelope).is_ok();
        self.metrics.bus_published(kind.as_str(), ok);
    }

    /// Delivers a stored message to every attached reader (except `skip`) and tells subscribers who are online
    /// but not attached with `{pres what:"msg"}` on `me`.
    /// Runs on every node the message's topic has online members on.
    pub(crate) async fn fan_out(&self, tenant: TenantId, msg: &Message, skip: Option<SessionId>) {
        let event = Event::Data { msg: msg.into() };
        self.dispatch(tenant, event, skip, Some(msg.from)).await;
    }

    /// Bumps the control version of `scope` and closes every matching session older than it, on every node,
    /// except `except` (a session of this node that made the change). Returns the sessions closed here.
    pub(crate) async fn control(
        &self,
        tenant: TenantId,
        user: UserId,
        scope: ControlScope,
        reason: &str,
        except: Option<SessionId>,
    ) -> ServiceResult<usize> {
        let version = self.ports.control.bump(tenant, user, &scope).await?;
        let except = except.map(|sid| session_ref(&self.cfg.node_id, sid));
        let event =
            Event::Control { user, scope: scope.clone(), version, reason: reason.to_owned(), except: except.clone() };
        self.publish_event(tenant, &event, None, None);
        Ok(self.apply_control(tenant, user, &scope, version, reason, except.as_deref()))
    }

    /// Delivers a business event here and publishes it for the other nodes.
    pub(crate) fn emit_business(
        &self,
        tenant: TenantId,
        to: BusinessTarget,
        event: &str,
        payload: &Value,
        from: Option<UserId>,
    ) -> usize {
        let ev = Event::Business { to: to.clone(), event: event.to_owned(), payload: payload.clone(), from };
        self.publish_event(tenant, &ev, None, from);
        self.deliver_business(tenant, &to, event, payload, from)
    }
}

/// The node's end of the bus: takes envelopes from the adapter without blocking and applies them in arrival
/// order on one task.
pub(crate) struct Receiver {
    tx: mpsc::Sender<Envelope>,
    metrics: Arc<crate::Metrics>,
}

impl BusSink for Receiver {
    fn deliver(&self, envelope: Envelope) {
        if self.tx.try_send(envelope).is_err() {
            // The applying task is behind; like a full session queue, clients recover by seq.
            self.metrics.bus_received("queue_full");
            self.metrics.bus_fanout("hub_full");
        }
    }
}

/// Subscribes the node to its bus and starts the task that applies remote events. Must run in a runtime.
pub(crate) fn start(inner: &Arc<Inner>, queue: usize) {
    if !inner.ports.bus.is_shared() {
        return;
    }
    let (tx, mut rx) = mpsc::channel::<Envelope>(queue.max(64));
    inner.ports.bus.subscribe(Arc::new(Receiver { tx, metrics: inner.metrics.clone() }));
    let weak: Weak<Inner> = Arc::downgrade(inner);
    tokio::spawn(async move {
        let mut seen = RecentIds::new(DEDUP_CAPACITY);
        while let Some(envelope) = rx.recv().await {
            let Some(inner) = weak.upgrade() else { break };
            inner.receive(envelope, &mut seen).await;
        }
    });
}

/// How many recent event ids a node remembers to drop repeats.
const DEDUP_CAPACITY: usize = 65_536;

impl Inner {
    async fn receive(&self, envelope: Envelope, seen: &mut RecentIds) {
        if envelope.source_node == self.cfg.node_id {
            self.metrics.bus_received("loopback");
            return;
        }
        if !seen.first(&envelope.event_id) {
            self.metrics.bus_received("duplicate");
            return;
        }
        let event: Event = match serde_json::from_str(&envelope.payload) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, event_id = %envelope.event_id, "undecodable realtime event dropped");
                self.metrics.bus_received("malformed");
                return;
            }
        };
        if !crate::delivery::event::matches_target(&event, &envelope.target) {
            // The payload names other targets than the envelope: a forged or corrupted envelope.
            self.metrics.bus_received("mismatch");
            return;
        }
        self.metrics.bus_received("applied");
        let age = crate::now_millis().saturating_sub(envelope.occurred_at);
        self.metrics.bus_latency(std::time::Duration::from_millis(u64::try_from(age).unwrap_or(0)));
        // Counted only: the event is applied either way (a topic event also reaches members online on `me`
        // who are not attached, and applying to no one costs little).
        let outcome = match (self.has_local_target(envelope.tenant, &envelope.target), &envelope.target) {
            (true, _) => "deliver",
            (false, BusTarget::Topic(_)) => "no_local_topic",
            (false, _) => "no_local_session",
        };
        self.metrics.bus_fanout(outcome);
        let started = std::time::Instant::now();
        self.apply(envelope.tenant, event, None).await;
        self.metrics.fanout_took(started.elapsed());
    }
}

impl Inner {
    /// True if a session of this node is what `target` names: attached to the topic, or of the user(s). A
    /// `Session` target is checked by the control code itself.
    fn has_local_target(&self, tenant: TenantId, target: &BusTarget) -> bool {
        let mut any = false;
        match target {
            BusTarget::Topic(topic) => {
                self.hub.for_each_attached(tenant, topic, |_| any = true);
                any
            }
            BusTarget::User(user) | BusTarget::Device { user, .. } => self.hub.user_session_count(tenant, *user) > 0,
            BusTarget::Users(users) => users.iter().any(|u| self.hub.user_session_count(tenant, *u) > 0),
            _ => true,
        }
    }
}
