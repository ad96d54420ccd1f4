//! The realtime bus over Redis Pub/Sub: a bounded queue and one publisher task per node on the
//! way out, one subscriber connection per node on the way in ([`crate::subscriber`]).
//!
//! **Publishing.** [`RealtimeBus::publish`] only queues. One task drains the queue in order and sends up to
//! `batch` envelopes per pipeline, waiting for each pipeline before the next, so the envelopes of one node
//! reach every other node in publish order. Each envelope costs one `EVALSHA` of [`ROUTE`], which decides in
//! Redis which channels need it and publishes there:
//!
//! | target | read | published to |
//! | --- | --- | --- |
//! | `Topic(t)` | `topic:{t}:online_nodes`, each node's `…:node:{n}:online_members` | every live node but the source; the broadcast channel if the nodes set does not exist (flushed, never joined) |
//! | `User(u)`, `Device{u,…}` | `presence:user:{u}:sessions` | every node with a live session but the source; nobody if the user has none |
//! | `Users(…)`, up to 16 | each user's `presence:user:{uid}:sessions` | every node with a live session of one of them, but the source |
//! | `Users(…)`, longer | nothing | the broadcast channel of the kind |
//! | `Session{node,…}` | nothing | that node's channel; not sent at all when it is the source |
//!
//! A user without a sessions key is offline everywhere as far as Redis knows; the envelope goes nowhere, and
//! a session that Redis lost (flush, failover) recovers by seq like any other missed event.
//!
//! **Losses, by design** (the bus is at-most-once): a full queue refuses the envelope, and a batch that Redis
//! fails is dropped whole rather than retried behind later envelopes. Both are counted in [`RedisMetrics`].
//!
//! [`RedisMetrics`]: crate::RedisMetrics

use crate::client::RedisClient;
use crate::envelope::encode;
use crate::subscriber::{SubscriberState, spawn_subscriber};
use palaver_core::ports::{BusError, BusSink, BusTarget, Envelope, RealtimeBus};
use parking_lot::Mutex;
use redis::Script;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// KEYS: the topic's online nodes (`topic`), or the session sets of each addressed user (`user`); none otherwise.
/// ARGV: mode, message, source node, broadcast channel, node-channel head, then the topic's node-set head
/// (`topic`), the presence TTL in seconds (`user`) or the target node (`node`). Answers the PUBLISH count.
pub(crate) const ROUTE: &str = r"
local mode, msg, source, head = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
if mode == 'broadcast' then redis.call('PUBLISH', ARGV[4], msg) return 1 end
if mode == 'node' then redis.call('PUBLISH', head .. ARGV[6], msg) return 1 end
local sent = 0
if mode == 'topic' then
  if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('PUBLISH', ARGV[4], msg) return 1 end
  for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if node ~= source and redis.call('EXISTS', ARGV[6] .. node .. ':online_members') == 1 then
      redis.call('PUBLISH', head .. node, msg)
      sent = sent + 1
    end
  end
  return sent
end
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seen = {}
for _, key in ipairs(KEYS) do
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. (clock - tonumber(ARGV[6]) * 1000), '+inf')) do
    local node = string.match(m, '^(.-)|')
    if node and node ~= source and not seen[node] then
      seen[node] = true
      redis.call('PUBLISH', head .. node, msg)
      sent = sent + 1
    end
  end
end
return sent
";

/// How often a failing publisher logs, at most.
const WARN_EVERY: Duration = Duration::from_secs(5);

/// The bus's sizes and timings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusConfig {
    /// Envelopes waiting for the publisher; past it `publish` refuses.
    pub queue: usize,
    /// The most envelopes sent in one pipeline.
    pub batch: usize,
    /// Event ids remembered by the subscriber to drop repeats.
    pub dedup_capacity: usize,
    /// The first wait before reconnecting the subscriber; it doubles up to `reconnect_max_ms`.
    pub reconnect_min_ms: u64,
    /// The longest wait between two reconnection attempts.
    pub reconnect_max_ms: u64,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self { queue: 65_536, batch: 256, dedup_capacity: 65_536, reconnect_min_ms: 100, reconnect_max_ms: 5000 }
    }
}

/// One node's handle on the Redis bus. Cloning is cheap; clones share the queue, the tasks and the counters.
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    client: RedisClient,
    node_id: Arc<str>,
    cfg: BusConfig,
    tx: mpsc::Sender<Envelope>,
    rx: Mutex<Option<mpsc::Receiver<Envelope>>>,
    publishing: AtomicBool,
    script: Arc<Script>,
    state: Arc<SubscriberState>,
    subscriber: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    /// The publisher ends by itself once the queue's sender is gone; the subscriber must be told.
    fn drop(&mut self) {
        if let Some(task) = self.subscriber.lock().take() {
            task.abort();
        }
    }
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus").field("node_id", &self.inner.node_id).field("cfg", &self.inner.cfg).finish()
    }
}

impl RedisBus {
    /// The bus of node `node_id`. Nothing is spawned or connected until the first `publish` or `subscribe`.
    pub fn new(client: RedisClient, node_id: impl Into<String>, cfg: BusConfig) -> Self {
        let cfg = BusConfig { queue: cfg.queue.max(1), batch: cfg.batch.max(1), ..cfg };
        let (tx, rx) = mpsc::channel(cfg.queue);
        let inner = Inner {
            client,
            node_id: Arc::from(node_id.into()),
            cfg,
            tx,
            rx: Mutex::new(Some(rx)),
            publishing: AtomicBool::new(false),
            script: Arc::new(Script::new(ROUTE)),
            state: Arc::new(SubscriberState::default()),
            subscriber: Mutex::new(None),
        };
        Self { inner: Arc::new(inner) }
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.inner.node_id
    }

    /// True while the subscriber holds a subscribed connection (for readiness and tests).
    pub fn subscriber_connected(&self) -> bool {
        self.inner.state.connected()
    }

    /// How often the subscriber connection was lost and established again.
    pub fn reconnects(&self) -> u64 {
        self.inner.state.reconnects()
    }

    /// Starts the publisher task if it is not running. Needs a tokio runtime; without one the envelopes wait
    /// in the queue for a call that has one.
    fn start_publisher(&self) {
        if self.inner.publishing.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let Some(rx) = self.inner.rx.lock().take() else { return };
        self.inner.publishing.store(true, Ordering::Release);
        let publisher = Publisher {
            client: self.inner.client.clone(),
            node_id: self.inner.node_id.clone(),
            script: self.inner.script.clone(),
            warned: None,
            suppressed: 0,
        };
        runtime.spawn(publisher.run(rx, self.inner.cfg.batch));
    }
}

impl RealtimeBus for RedisBus {
    fn publish(&self, envelope: Envelope) -> Result<(), BusError> {
        self.start_publisher();
        self.inner.tx.try_send(envelope).map_err(|e| {
            self.inner.client.metrics().bus_dropped_full();
            match e {
                mpsc::error::TrySendError::Full(_) => BusError("redis bus queue full".into()),
                mpsc::error::TrySendError::Closed(_) => BusError("redis bus closed".into()),
            }
        })
    }

    fn subscribe(&self, sink: Arc<dyn BusSink>) {
        self.start_publisher();
        let mut task = self.inner.subscriber.lock();
        if task.is_some() {
            tracing::warn!(node_id = %self.inner.node_id, "redis bus subscribed twice; keeping the first sink");
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                *task = Some(spawn_subscriber(
                    &runtime,
                    &self.inner.client,
                    &self.inner.node_id,
                    &self.inner.cfg,
                    self.inner.state.clone(),
                    sink,
                ));
            }
            Err(_) => tracing::error!("redis bus subscribe called outside a tokio runtime; nothing will arrive"),
        }
    }

    fn is_shared(&self) -> bool {
        true
    }
}

/// The longest user list routed by presence; longer ones are broadcast.
const ROUTED_USERS_MAX: usize = 16;

/// Where one envelope goes, decided before the script decides which nodes.
enum Route {
    Topic(String),
    /// One user, or a short list of users (a P2P message's two parties), routed by their presence sessions.
    Users(Vec<palaver_core::UserId>),
    Broadcast,
    Node(String),
    /// A session on the source node: no other node needs it.
    Nowhere,
}

fn route(envelope: &Envelope) -> Route {
    match &envelope.target {
        BusTarget::Topic(topic) => Route::Topic(topic.clone()),
        BusTarget::User(user) | BusTarget::Device { user, .. } => Route::Users(vec![*user]),
        // A long list (a user's contacts) costs one broadcast rather than a presence read per user.
        BusTarget::Users(users) if users.len() <= ROUTED_USERS_MAX => Route::Users(users.clone()),
        BusTarget::Users(_) => Route::Broadcast,
        BusTarget::Session { node_id, .. } if *node_id == envelope.source_node => Route::Nowhere,
        BusTarget::Session { node_id, .. } => Route::Node(node_id.clone()),
    }
}

/// The publisher task's state: it owns the queue's receiver and nothing of the handle, so that dropping the
/// last handle closes the queue and ends the task.
struct Publisher {
    client: RedisClient,
    node_id: Arc<str>,
    script: Arc<Script>,
    warned: Option<Instant>,
    suppressed: u64,
}

impl Publisher {
    async fn run(mut self, mut rx: mpsc::Receiver<Envelope>, batch: usize) {
        let mut envelopes = Vec::with_capacity(batch);
        while rx.recv_many(&mut envelopes, batch).await > 0 {
            self.send(&envelopes).await;
            envelopes.clear();
        }
    }

    /// Sends one batch as one pipeline. Every command in it is the route script, so a `NOSCRIPT` means none
    /// ran and the client's single retry after loading it cannot publish anything twice.
    async fn send(&mut self, envelopes: &[Envelope]) {
        let client = self.client.clone();
        let (metrics, keys) = (client.metrics(), client.keys());
        let ttl = client.config().presence_ttl_seconds;
        let mut pipe = redis::pipe();
        let (mut calls, mut unsent) = (0_u64, 0_u64);
        for envelope in envelopes {
            let message = match encode(envelope) {
                Ok(message) => message,
                Err(e) => {
                    metrics.bus_publish_failed(1);
                    self.warn(&format!("envelope {} not sent: {e}", envelope.event_id));
                    continue;
                }
            };
            let t = envelope.tenant;
            let (mode, route_keys, extra) = match route(envelope) {
                Route::Topic(topic) => {
                    ("topic", vec![keys.topic_online_nodes(t, &topic)], keys.topic_node_head(t, &topic))
                }
                Route::Users(users) => {
                    let sets = users.iter().map(|u| keys.presence_user_sessions(t, *u)).collect();
                    ("user", sets, ttl.to_string())
                }
                Route::Broadcast => ("broadcast", Vec::new(), String::new()),
                Route::Node(node) => ("node", Vec::new(), node),
                Route::Nowhere => {
                    unsent += 1;
                    continue;
                }
            };
            let cmd = pipe.cmd("EVALSHA").arg(self.script.get_hash()).arg(route_keys.len());
            for key in route_keys {
                cmd.arg(key);
            }
            cmd.arg(mode)
                .arg(message)
                .arg(&envelope.source_node)
                .arg(keys.rt_channel(t, envelope.kind))
                .arg(keys.rt_node_head(t))
                .arg(extra);
            calls += 1;
        }
        metrics.bus_published(unsent, 0);
        if calls == 0 {
            return;
        }
        match client.script_pipeline::<Vec<u64>>(&[&self.script], &pipe).await {
            Ok(counts) => {
                metrics.bus_published(calls, counts.iter().sum());
                self.warned = None;
            }
            Err(e) => {
                metrics.bus_publish_failed(calls);
                self.warn(&format!("dropped a batch of {calls} envelopes: {e}"));
            }
        }
    }

    /// Logs a failure at most every [`WARN_EVERY`], with the number of failures it did not log.
    fn warn(&mut self, what: &str) {
        let now = Instant::now();
        if self.warned.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(node_id = %self.node_id, suppressed = self.suppressed, "redis bus: {what}");
        self.warned = Some(now);
        self.suppressed = 0;
    }
}

/// Without its subscriber the node misses other nodes' events until it reconnects (clients catch up by seq),
/// so it is reported, not required.
#[async_trait::async_trait]
impl palaver_core::ports::HealthCheck for RedisBus {
    fn name(&self) -> &'static str {
        "bus"
    }

    fn required(&self) -> bool {
        false
    }

    async fn check(&self) -> Result<(), String> {
        if self.subscriber_connected() {
            Ok(())
        } else {
            Err("the realtime bus subscriber is not subscribed (reconnecting)".into())
        }
    }
}
