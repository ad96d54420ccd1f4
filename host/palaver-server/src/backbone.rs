//! The task queue a node runs on and the background work on it: the outbox relay, the audit consumer, the
//! admin command consumer, the file-security worker, the plugin-event worker and, with `push.enabled` and
//! `push.worker`, the push worker.
//!
//! With `[kafka]` the queue is Kafka; without it, the embedded queue in a SQLite file of its own, `queue.db` in the
//! data directory, beside the embedded default's store file or for a node on MariaDB (one node's queue, then: a
//! cluster on MariaDB runs Kafka). Either way Kafka is never on the WebSocket path: sessions write to the outbox,
//! and only these tasks talk to the queue.

use crate::config::Config;
use anyhow::Context;
use palaver_core::ports::{AuditStore, HealthCheck, OutboxStore, PushDedup, TaskQueue, TenantStore};
use palaver_core::{StoreResult, TenantId, TenantState};
use palaver_queue_kafka::KafkaQueue;
use palaver_service::admin::{AdminConsumer, ConsumerConfig, TenantDirectory};
use palaver_service::backbone::audit::AuditConsumer;
use palaver_service::backbone::events::EventWorker;
use palaver_service::backbone::push::worker::{PushWorker, WorkerConfig};
use palaver_service::backbone::relay::{Relay, RelayConfig};
use palaver_service::{ScanWorker, ScanWorkerConfig, Service};
use palaver_store_sqlite::{SqliteQueue, SqliteStore};
use std::sync::Arc;
use std::time::Duration;

/// How often a node retries creating missing Kafka topics after the broker was unreachable at start.
const TOPICS_RETRY: Duration = Duration::from_secs(5);

/// The consumer group suffix of the audit consumer (one group across the nodes).
const AUDIT_GROUP: &str = "audit";

/// The consumer group suffix of the push worker (one group across the nodes).
const PUSH_GROUP: &str = "push";

/// The consumer group suffix of the plugin-event worker (one group across the nodes).
const PLUGIN_EVENT_GROUP: &str = "plugin-events";

/// The consumer group suffix of the file-security worker (one group across the nodes).
const FILE_SECURITY_GROUP: &str = "file-security";

type Task = tokio::task::JoinHandle<()>;

/// The queue and the tasks on it; dropping it does not stop them, [`Backbone::stop`] does.
pub(crate) struct Backbone {
    pub(crate) queue: Arc<dyn TaskQueue>,
    /// Kafka's check for `/readyz` (none for the embedded queue: its file sits beside the store's in the data
    /// directory, whose check stands for both).
    pub(crate) health: Option<Arc<dyn HealthCheck>>,
    /// Kafka's consumer lag, for the node's registry (`None` for the embedded queue).
    pub(crate) metrics: Option<Arc<dyn palaver_core::MetricsSource>>,
    /// Whether the queue is the embedded one (a SQLite file), which is down only when the node's files are.
    pub(crate) embedded: bool,
    /// The prefix of every consumer group this node joins (`kafka.group_id`, `palaver` when embedded).
    pub(crate) group_id: String,
    /// The embedded queue's own file, closed on stop (`None` on Kafka).
    own_file: Option<SqliteStore>,
    tasks: Vec<Task>,
    /// Tells the admin command consumer to stop between records.
    admin_stop: tokio::sync::watch::Sender<bool>,
}

/// Opens the configured queue. `sqlite` is the embedded store, whose file held the embedded queue before it got a
/// file of its own: what it still holds is moved over first.
pub(crate) async fn open_queue(cfg: &Config, sqlite: Option<&SqliteStore>) -> anyhow::Result<Backbone> {
    type Opened = (Arc<dyn TaskQueue>, Option<Arc<dyn HealthCheck>>, String, Option<SqliteStore>, Vec<Task>);
    let mut metrics: Option<Arc<dyn palaver_core::MetricsSource>> = None;
    let (queue, health, group_id, own_file, tasks): Opened = match (&cfg.kafka, sqlite) {
        (Some(k), _) => {
            let queue = KafkaQueue::new(k.clone()).context("configuring the Kafka client")?;
            // The broker may be down at start: chat starts anyway, and the topics are created once it answers
            // (until then the relay's produces fail and the outbox holds the records).
            let creating = queue.clone();
            let topics = tokio::spawn(async move {
                while let Err(err) = creating.ensure_topics().await {
                    tracing::warn!(%err, "cannot create the Kafka topics yet; retrying");
                    tokio::time::sleep(TOPICS_RETRY).await;
                }
            });
            let health: Arc<dyn HealthCheck> = Arc::new(queue.clone());
            metrics = Some(Arc::new(queue.clone()));
            (Arc::new(queue), Some(health), k.group_id.clone(), None, vec![topics])
        }
        (None, store) => {
            // Its own file, not the store's: the store's one writer connection commits the messages, and the
            // queue's writes (a push task per message, offsets) queued behind them slowed publishing (measured
            // with `palaver-bench publish --compare-push`).
            let path = cfg.server.data_dir.join("queue.db");
            let file = SqliteStore::open(&path).await.with_context(|| format!("opening {}", path.display()))?;
            let queue = SqliteQueue::new(file.clone());
            if let Some(store) = store {
                let moved = queue.adopt(store).await.context("moving the embedded queue out of the store's file")?;
                if moved.records > 0 || moved.offsets > 0 {
                    tracing::info!(
                        records = moved.records,
                        offsets = moved.offsets,
                        "moved the embedded queue from the store's file to {}",
                        path.display()
                    );
                }
            }
            (Arc::new(queue), None, "palaver".to_owned(), Some(file), Vec::new())
        }
    };
    let (admin_stop, _) = tokio::sync::watch::channel(false);
    let embedded = cfg.kafka.is_none();
    Ok(Backbone { queue, health, metrics, embedded, group_id, own_file, tasks, admin_stop })
}

impl Backbone {
    /// Starts the outbox relay, the audit consumer and the admin command consumer of this node.
    pub(crate) fn start(
        &mut self,
        cfg: &Config,
        service: &Service,
        outbox: Arc<dyn OutboxStore>,
        audit: Arc<dyn AuditStore>,
        tenants: Option<Arc<dyn TenantStore>>,
    ) {
        let o = &cfg.outbox;
        let relay = RelayConfig {
            owner: cfg.server.node_id.clone(),
            batch: o.relay_batch,
            interval: Duration::from_millis(o.relay_interval_ms),
            backoff_max: Duration::from_millis(o.relay_backoff_max_ms),
            lease: Duration::from_millis(o.lease_ms),
        };
        // The embedded queue is down only when the store is: push tasks and message events go straight to it, not
        // through the outbox.
        if self.embedded {
            service.queue_through(self.queue.clone());
        }
        let state = service.backbone();
        let directory = Arc::new(Directory { registry: tenants.clone() });
        self.tasks.push(Relay::new(outbox, self.queue.clone(), tenants, state.clone(), relay).spawn());
        // Admin commands: one group across the nodes (`kafka.group_id` itself), so the nodes share the partitions.
        let a = &cfg.admin_commands;
        let commands = ConsumerConfig {
            group: self.group_id.clone(),
            max_attempts: a.max_attempts,
            backoff_initial: Duration::from_millis(a.retry_backoff_ms),
            backoff_max: Duration::from_millis(a.retry_backoff_max_ms),
        };
        let consumer = AdminConsumer::new(service.clone(), self.queue.clone(), directory, commands);
        self.tasks.push(tokio::spawn(consumer.run(self.admin_stop.subscribe())));
        let group = format!("{}.{AUDIT_GROUP}", self.group_id);
        self.tasks.push(AuditConsumer::new(self.queue.clone(), audit, state, group).spawn());
    }

    /// Starts the push worker on `im.push.task`, sending through each tenant's providers; it polls the delayed pushes of
    /// every active tenant of `tenants` (of the default tenant without a registry). On the embedded queue the
    /// publish side's push tasks are produced to it directly rather than through the outbox.
    pub(crate) fn start_push(
        &mut self,
        cfg: &Config,
        service: &Service,
        dedup: Arc<dyn PushDedup>,
        tenants: Option<Arc<dyn TenantStore>>,
    ) {
        let p = &cfg.push;
        let worker = WorkerConfig {
            group: format!("{}.{PUSH_GROUP}", self.group_id),
            max_attempts: p.max_attempts,
            backoff_initial: Duration::from_millis(p.retry_backoff_ms),
            backoff_max: Duration::from_millis(p.retry_backoff_max_ms),
        };
        let mut worker = PushWorker::new(service.clone(), self.queue.clone(), dedup, worker);
        if let Some(registry) = tenants {
            worker = worker.with_tenants(registry);
        }
        self.tasks.push(worker.spawn());
    }

    /// Starts the plugin-event worker on `im.plugin.event`. It runs on every node whatever the configuration: an
    /// event exists only while some plugin listens, and delivering what was queued before a plugin was turned off
    /// (to nobody, then) is its job too.
    pub(crate) fn start_events(&mut self, service: &Service) {
        let group = format!("{}.{PLUGIN_EVENT_GROUP}", self.group_id);
        self.tasks.push(EventWorker::new(service.clone(), self.queue.clone(), group).spawn());
    }

    /// Starts the file-security worker on `im.file.security`. It runs on every node whatever the configuration:
    /// a task only exists for an upload some scanner looks at, and settling the tasks of a scanner that was
    /// removed since (as clean, by the plugins left) is its job too.
    pub(crate) fn start_file_scan(&mut self, cfg: &Config, service: &Service) {
        let s = &cfg.files.scan;
        let worker = ScanWorkerConfig {
            group: format!("{}.{FILE_SECURITY_GROUP}", self.group_id),
            max_attempts: s.max_attempts,
            backoff_initial: Duration::from_millis(s.retry_backoff_ms),
            backoff_max: Duration::from_millis(s.retry_backoff_max_ms),
        };
        self.tasks.push(ScanWorker::new(service.clone(), self.queue.clone(), worker).spawn());
    }

    /// Stops the tasks (a record in flight is produced again or redelivered later: both are idempotent).
    pub(crate) async fn stop(self) {
        let _ = self.admin_stop.send(true);
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(store) = self.own_file {
            store.close().await;
        }
    }
}

/// Resolves admin commands' tenants: the registry on MariaDB; the one default tenant (id 1, code `default`) when
/// embedded.
struct Directory {
    registry: Option<Arc<dyn TenantStore>>,
}

#[async_trait::async_trait]
impl TenantDirectory for Directory {
    async fn resolve(&self, id: Option<&str>, code: Option<&str>) -> StoreResult<Option<TenantId>> {
        let id = match id {
            Some(raw) => match raw.trim().parse::<u64>() {
                Ok(n) => Some(TenantId(n)),
                Err(_) => return Ok(None),
            },
            None => None,
        };
        let Some(registry) = &self.registry else {
            let by_id = id.is_none_or(|t| t == TenantId::DEFAULT);
            let by_code = code.is_none_or(|c| c == palaver_store_mysql::DEFAULT_TENANT_CODE);
            return Ok((by_id && by_code).then_some(TenantId::DEFAULT));
        };
        let tenant = match (id, code) {
            (Some(t), _) => registry.get_tenant(t).await?,
            (None, Some(c)) => registry.find_tenant_by_code(c).await?,
            (None, None) => None,
        };
        // Both given: they must name the same tenant.
        let tenant = tenant.filter(|t| code.is_none_or(|c| c == t.code));
        Ok(tenant.filter(|t| t.state == TenantState::Active).map(|t| t.id))
    }
}
