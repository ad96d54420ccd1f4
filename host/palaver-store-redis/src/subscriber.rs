//! The bus's way in: one task per node holding one dedicated Pub/Sub connection (never one per user or
//! session), subscribed by pattern to the node's own channel and to every broadcast channel of every tenant.
//!
//! Each message is decoded and checked before the sink sees it: an envelope whose tenant differs from its
//! channel's is refused (a tenant can only publish on its own channels, so a mismatch is a bug or forgery),
//! the node's own envelopes are dropped, and an event id seen among the last `dedup_capacity` is dropped.
//!
//! The connection is outside the client's pool and circuit breaker: when it drops the task reconnects with
//! exponential backoff for as long as the node runs. A periodic `PING` finds a connection that died without
//! closing. Messages published while it was away are lost, as the bus's at-most-once contract allows.

use crate::bus::BusConfig;
use crate::client::{RedisClient, redis_error};
use crate::envelope::decode;
use crate::keys::Keys;
use crate::metrics::RedisMetrics;
use futures_util::StreamExt;
use palaver_core::RecentIds;
use palaver_core::ports::BusSink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often the subscriber checks an otherwise quiet connection.
const PING_EVERY: Duration = Duration::from_secs(5);

/// What the subscriber reports to its bus handle.
#[derive(Debug, Default)]
pub(crate) struct SubscriberState {
    connected: AtomicBool,
    reconnects: AtomicU64,
}

impl SubscriberState {
    pub(crate) fn connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    pub(crate) fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Acquire)
    }
}

struct Subscriber {
    client: RedisClient,
    node_id: Arc<str>,
    cfg: BusConfig,
    state: Arc<SubscriberState>,
    sink: Arc<dyn BusSink>,
    dedup: RecentIds,
}

/// Spawns the subscriber of node `node_id`, delivering to `sink`.
pub(crate) fn spawn_subscriber(
    runtime: &tokio::runtime::Handle,
    client: &RedisClient,
    node_id: &Arc<str>,
    cfg: &BusConfig,
    state: Arc<SubscriberState>,
    sink: Arc<dyn BusSink>,
) -> JoinHandle<()> {
    let subscriber = Subscriber {
        client: client.clone(),
        node_id: node_id.clone(),
        cfg: cfg.clone(),
        state,
        sink,
        dedup: RecentIds::new(cfg.dedup_capacity),
    };
    runtime.spawn(subscriber.run())
}

impl Subscriber {
    async fn run(mut self) {
        let patterns = self.client.keys().rt_patterns(&self.node_id);
        let min = Duration::from_millis(self.cfg.reconnect_min_ms.max(1));
        let max = Duration::from_millis(self.cfg.reconnect_max_ms).max(min);
        let mut backoff = min;
        let mut lost = false;
        loop {
            match self.connect(&patterns).await {
                Ok(pubsub) => {
                    if lost {
                        self.state.reconnects.fetch_add(1, Ordering::AcqRel);
                        self.client.metrics().bus_reconnected();
                        tracing::info!(node_id = %self.node_id, "redis bus subscriber reconnected");
                    }
                    self.state.connected.store(true, Ordering::Release);
                    backoff = min;
                    self.pump(pubsub).await;
                    self.state.connected.store(false, Ordering::Release);
                    lost = true;
                    tracing::warn!(node_id = %self.node_id, "redis bus subscriber connection lost; reconnecting");
                }
                Err(e) => {
                    tracing::warn!(node_id = %self.node_id, error = %e, retry_ms = backoff.as_millis() as u64,
                        "redis bus subscriber cannot connect");
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(max);
        }
    }

    /// Opens the dedicated connection and subscribes, bounded by the client's command timeout.
    async fn connect(&self, patterns: &[String]) -> Result<redis::aio::PubSub, String> {
        let redis = self.client.dedicated().map_err(|e| e.to_string())?;
        let open = async {
            let mut pubsub = redis.get_async_pubsub().await?;
            pubsub.psubscribe(patterns).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(self.client.config().command_timeout(), open).await {
            Ok(Ok(pubsub)) => Ok(pubsub),
            Ok(Err(e)) => Err(redis_error(e).to_string()),
            Err(_) => Err("timed out".into()),
        }
    }

    /// Reads messages until the connection is lost.
    async fn pump(&mut self, pubsub: redis::aio::PubSub) {
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        loop {
            tokio::select! {
                message = stream.next() => match message {
                    Some(message) => self.handle(message.get_channel_name(), message.get_payload_bytes()),
                    None => return,
                },
                _ = ping.tick() => {
                    let alive = tokio::time::timeout(
                        self.client.config().io_timeout(),
                        sink.ping::<redis::Value>(),
                    )
                    .await;
                    if !matches!(alive, Ok(Ok(_))) {
                        return;
                    }
                }
            }
        }
    }

    /// Checks one message and hands it to the sink.
    fn handle(&mut self, channel: &str, payload: &[u8]) {
        let metrics: &RedisMetrics = self.client.metrics();
        metrics.bus_received();
        let keys: &Keys = self.client.keys();
        let envelope = match std::str::from_utf8(payload)
            .map_err(|e| e.to_string())
            .and_then(|text| decode(text).map_err(|e| e.to_string()))
        {
            Ok(envelope) => envelope,
            Err(e) => {
                metrics.bus_cross_tenant_dropped();
                tracing::warn!(channel, error = %e, "redis bus message dropped: undecodable");
                return;
            }
        };
        if keys.channel_tenant(channel) != Some(envelope.tenant) {
            metrics.bus_cross_tenant_dropped();
            tracing::warn!(channel, tenant = envelope.tenant.0, event_id = %envelope.event_id,
                "redis bus message dropped: its tenant differs from its channel's");
            return;
        }
        if *envelope.source_node == *self.node_id {
            metrics.bus_loopback_dropped();
            return;
        }
        if !self.dedup.first(&envelope.event_id) {
            metrics.bus_duplicate_dropped();
            return;
        }
        self.sink.deliver(envelope);
    }
}
