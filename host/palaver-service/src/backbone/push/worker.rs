//! The push worker: one consumer group across the nodes reads `im.push.task` and, per task, pushes every
//! recipient's devices through their provider.
//!
//! **Recipients.** The topic's subscribers whose mode has R and P (a user who turned P off has muted the topic),
//! except users who had a session attached to the topic when the message was stored (on the publishing node, or,
//! in a cluster, on any node as the shared presence lists them when the worker reads the task): they
//! saw it. The sender's other devices get a silent push (no text, no alert) so apps can sync; the device that
//! sent it gets none. Messages from blocked senders and held messages never make a task. A read receipt
//! (`what: read`) or a subscription change by someone else (`what: sub`) names its one user, whose devices get a
//! silent push (the reading device excepted) so apps clear notifications.
//!
//! **Reads.** Per task the worker needs the topic's subscribers and each recipient's devices. On a node alone
//! (no shared bus) both come from memory, exact because every change to them goes through this process: the
//! subscribers from the loaded topic's cache, which every membership and mode change drops, and the devices
//! from [`super::devices::DeviceCopies`]. In a cluster both are read from the store per task.
//!
//! **Once.** Before pushing a user, the worker claims `push:dedup:{topic}:{seq}:{uid}` (Redis `SET NX` with
//! `push.dedup_ttl_ms` in scale-out, a bounded in-process map when embedded), so a redelivered task or a second
//! worker pushes nobody twice. The offset is committed after the record's tasks are done: once per fetched batch
//! (at most 64 records of up to [`super::TASKS_PER_RECORD`] tasks each) where the queue says what it holds (the
//! embedded queue), so a crash may hand a batch out again: Redis's claims absorb that; an embedded node's
//! in-process claims end with it, so after a crash its restart may push up to that batch a second time.
//!
//! **Failures.** A retryable failure (429, 5xx, network) is retried with exponential backoff, honouring the
//! provider's `Retry-After`, up to `push.max_attempts`; then, like a refusal that will not change, it is recorded
//! on the dead-letter topic with the reason (the embedded queue's table in embedded mode) and counted. A token
//! the provider reports unregistered removes its device.
//!
//! **Filters.** Between the claim and the send, the tenant's push filters (plugins' `before-push`) may keep,
//! drop, delay or rewrite each recipient's push; see the `filter` module.

mod delayed;
mod filter;

use super::payload::{self, build_message};
use super::state::PushState;
use super::tenants::TenantPush;
use crate::Service;
use crate::names::wire_name;
use palaver_core::ports::{Delivery, Device, PushDedup, PushError, PushTask, QueueTopic, TaskQueue, TenantStore};
use palaver_core::{AccessMode, StoreResult, TenantId, UserId};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most tasks done before their offsets are committed, even while the consumer holds more.
const COMMIT_EVERY: usize = 64;

/// How the worker retries.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The consumer group (every node uses the same one).
    pub group: String,
    /// Attempts per device before a retryable failure is recorded as final.
    pub max_attempts: u32,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

/// The push topic's consumer. A clone shares everything (a delayed push sends through one).
#[derive(Clone)]
pub struct PushWorker {
    service: Service,
    queue: Arc<dyn TaskQueue>,
    dedup: Arc<dyn PushDedup>,
    cfg: WorkerConfig,
    /// The tenants whose delayed pushes the poller sends; none: the default tenant only (the embedded mode).
    tenants: Option<Arc<dyn TenantStore>>,
}

impl PushWorker {
    pub fn new(
        service: Service,
        queue: Arc<dyn TaskQueue>,
        dedup: Arc<dyn PushDedup>,
        cfg: WorkerConfig,
    ) -> PushWorker {
        PushWorker { service, queue, dedup, cfg, tenants: None }
    }

    /// The worker for every active tenant of `registry` (their delayed pushes are polled), not only the default.
    pub fn with_tenants(mut self, registry: Arc<dyn TenantStore>) -> PushWorker {
        self.tenants = Some(registry);
        self
    }

    /// Runs the consumer and the delay poller; aborting the handle stops both.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        let poller = self.clone();
        tokio::spawn(async move {
            tokio::join!(self.run(), poller.poll_delayed());
        })
    }

    /// Consumes until the task is aborted, joining the group again after a queue failure.
    pub async fn run(self) {
        crate::backbone::keep_consuming("push worker", &self.cfg.group, || self.consume()).await;
    }

    fn state(&self) -> &PushState {
        &self.service.inner.push
    }

    async fn consume(&self) -> StoreResult<()> {
        let mut consumer = self.queue.subscribe(QueueTopic::Push, &self.cfg.group).await?;
        // The newest done delivery of each partition, not committed yet: commits wait while the consumer holds
        // more fetched records (one offset write per batch rather than per task), and never past a batch or
        // [`COMMIT_EVERY`] tasks, nor while `next` may wait.
        let mut done: BTreeMap<i32, Delivery> = BTreeMap::new();
        let mut uncommitted = 0;
        loop {
            let delivery = consumer.next().await?;
            self.handle(&delivery).await?;
            done.insert(delivery.partition, delivery);
            uncommitted += 1;
            if consumer.buffered() > 0 && uncommitted < COMMIT_EVERY {
                continue;
            }
            for (_, delivery) in std::mem::take(&mut done) {
                if let Err(err) = consumer.commit(&delivery).await {
                    tracing::warn!(%err, offset = delivery.offset, "push worker: commit failed; the tasks will repeat");
                }
            }
            uncommitted = 0;
        }
    }

    async fn handle(&self, delivery: &Delivery) -> StoreResult<()> {
        let tasks = match super::push_tasks(&delivery.record.payload) {
            Ok(tasks) => tasks,
            Err(err) => return self.dead_letter(delivery, &format!("not a push task: {err}"), None).await,
        };
        // In the record's order, which is the topic's: a failure of one task's sending is its own dead letter and
        // the next task goes on; a store failure ends the record here, to be handed out again whole.
        for task in &tasks {
            self.push_task(task, delivery).await?;
        }
        Ok(())
    }

    /// Pushes one task to its recipients.
    pub(crate) async fn push_task(&self, task: &PushTask, delivery: &Delivery) -> StoreResult<()> {
        // The tenant's settings as stored decide: a task made while they were loading on the publishing node
        // followed the node's switches.
        let push = self.service.inner.push_tenants.get(task.tenant).await;
        if !push.enabled {
            self.state().tenant_off.inc();
            return Ok(());
        }
        let stripped;
        let task = if !push.preview && task.preview.is_some() {
            stripped = PushTask { preview: None, ..task.clone() };
            &stripped
        } else {
            task
        };
        // A message's dedup key is the topic's; a read receipt's or a subscription change's is kept apart from
        // it, so the reader's push for seq 5 is not taken for the message push of seq 5.
        let dedup_topic = match task.to {
            None => task.topic.clone(),
            Some(_) => format!("{}#{}", task.topic, task.what),
        };
        for user in self.recipients(task).await? {
            let sender = user == task.from;
            let devices: Vec<Device> = self
                .devices(task.tenant, user)
                .await?
                .iter()
                .filter(|d| !(sender && task.sender_device.as_deref() == Some(&d.device_id)))
                .cloned()
                .collect();
            if devices.is_empty() {
                continue;
            }
            let ttl = self.service.inner.cfg.push.dedup_ttl_ms;
            if !self.dedup.claim(task.tenant, &dedup_topic, task.seq, user, ttl).await? {
                self.state().deduplicated.inc();
                continue;
            }
            let silent = sender || task.to.is_some() || payload::silent_for_all(task);
            let msg = build_message(task, &wire_name(&task.topic, user), silent);
            let filter::Filtered::Send(msg) = self.filter(task, user, &devices, msg, delivery).await else {
                continue;
            };
            for device in devices {
                self.send(task, &push, &device, &msg, delivery).await?;
            }
        }
        Ok(())
    }

    /// Who a task pushes: its one user for a read receipt or a subscription change; for a message, the
    /// sender (silently, for their other devices) and the subscribers with R and P that were not attached.
    async fn recipients(&self, task: &PushTask) -> StoreResult<Vec<UserId>> {
        if let Some(user) = task.to {
            return Ok(vec![user]);
        }
        let ports = &self.service.inner.ports;
        // Alone, this node is where every membership change happens, so the topic's cached subscribers are
        // exact; in a cluster the change may have been made on a node that never tells this one (it tells only
        // nodes with online members of the topic), so the store is read.
        let subs = if ports.bus.is_shared() {
            let subs = ports.subs.list_topic_subs(task.tenant, &task.topic).await?;
            Arc::new(subs.iter().map(|s| (s.user, s.mode())).collect())
        } else {
            self.service.inner.subscribers(task.tenant, &task.topic).await?
        };
        // Attached on any node, in a cluster: the publishing node's own list, plus what every node's hub told
        // the shared presence (a few milliseconds behind a `{sub}` or `{leave}`). If that cannot be read, the
        // publishing node's list alone decides: a push too many rather than one missed.
        let mut attached = task.attached.clone();
        if ports.bus.is_shared() {
            match ports.presence.attached_users(task.tenant, &task.topic).await {
                Ok(elsewhere) => attached.extend(elsewhere),
                Err(e) => tracing::debug!(error = %e, "attached users not read; the publishing node's list decides"),
            }
        }
        let wanted = |(user, mode): &(UserId, AccessMode)| {
            *user == task.from || (!attached.contains(user) && mode.has(AccessMode::READ) && mode.has(AccessMode::PRES))
        };
        Ok(subs.iter().filter(|s| wanted(s)).map(|(user, _)| *user).collect())
    }

    /// The user's devices: on a node alone, from the worker's copies (exact: every device change goes through
    /// this process and drops them); in a cluster, from the store, since any node may register a device.
    async fn devices(&self, tenant: TenantId, user: UserId) -> StoreResult<Arc<Vec<Device>>> {
        let inner = &self.service.inner;
        if inner.ports.bus.is_shared() {
            return Ok(Arc::new(inner.ports.devices.list_devices(tenant, user).await?));
        }
        let epoch = match self.state().devices.get(tenant, user) {
            Ok(devices) => return Ok(devices),
            Err(epoch) => epoch,
        };
        let devices = Arc::new(inner.ports.devices.list_devices(tenant, user).await?);
        self.state().devices.put(tenant, user, epoch, devices.clone());
        Ok(devices)
    }

    /// Sends to one device, retrying what is worth retrying; the final outcome is counted and, if a failure,
    /// recorded on the dead-letter topic.
    async fn send(
        &self,
        task: &PushTask,
        push: &TenantPush,
        device: &Device,
        msg: &palaver_core::ports::PushMessage,
        delivery: &Delivery,
    ) -> StoreResult<()> {
        let Some(provider) = push.provider(&device.provider) else {
            self.state().failed(&device.provider, "not_configured", None);
            return Ok(());
        };
        let mut backoff = self.cfg.backoff_initial;
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            let outcome = provider.send(task.tenant, device, msg).await;
            let took = started.elapsed();
            match outcome {
                Ok(()) => {
                    self.state().sent(provider.name(), took);
                    return Ok(());
                }
                Err(PushError::Unregistered) => {
                    self.state().failed(provider.name(), "unregistered", Some(took));
                    let ports = &self.service.inner.ports;
                    let removed = ports.devices.delete_device(task.tenant, device.user, &device.device_id).await;
                    self.state().devices.changed();
                    if removed? {
                        self.state().removed_devices.inc();
                    }
                    return Ok(());
                }
                Err(PushError::Retry { reason, after_ms }) if attempt < self.cfg.max_attempts => {
                    self.state().failed(provider.name(), "retry", Some(took));
                    tracing::debug!(provider = provider.name(), %reason, attempt, "push failed; retrying");
                    let wait = after_ms.map(Duration::from_millis).unwrap_or(backoff).min(self.cfg.backoff_max);
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(self.cfg.backoff_max);
                    attempt += 1;
                }
                Err(err) => {
                    let reason = if matches!(err, PushError::Retry { .. }) { "retries_exhausted" } else { "refused" };
                    self.state().failed(provider.name(), reason, Some(took));
                    let detail = format!("{}: {err}", provider.name());
                    return self.dead_letter(delivery, &detail, Some((task, device))).await;
                }
            }
        }
    }

    /// Records a failed push (or an undecodable record) on the dead-letter topic with the reason in its headers.
    /// A failed push's letter carries its one task (the record may carry the topic's others), and names its seq.
    async fn dead_letter(
        &self,
        delivery: &Delivery,
        reason: &str,
        failed: Option<(&PushTask, &Device)>,
    ) -> StoreResult<()> {
        tracing::warn!(reason, offset = delivery.offset, "push sent to the dead-letter topic");
        self.state().dead_lettered.inc();
        let mut record = delivery.dead_letter(reason);
        if let Some((task, d)) = failed {
            record.payload = serde_json::to_vec(task).unwrap_or_default();
            record.headers.push(("push.seq".to_owned(), task.seq.to_string()));
            record.headers.push(("push.user".to_owned(), d.user.to_string()));
            record.headers.push(("push.device".to_owned(), d.device_id.clone()));
        }
        self.queue.produce(record).await
    }
}
