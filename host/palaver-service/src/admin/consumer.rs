//! The admin command consumer: one member of the consumer group on `im.admin.command` per node, so that the
//! nodes share the partitions. Each record is settled before its offset is committed, and nothing stalls a
//! partition: a record without a readable `command_id` goes to the dead-letter topic with its bytes, partition,
//! offset and the error; a wrong command (unknown tenant, type or target, bad payload) gets a `rejected` result;
//! a transient failure is retried with backoff, without committing, and after `max_attempts` the record goes to
//! the dead-letter topic and a `failed` result is published.
//!
//! The effect happens before the commit, so a crash between them redelivers the record; the ledger then finds
//! the command final and only its stored result is republished (exactly one effect per `command_id`).

use super::{AdminCommand, CommandResult, Outcome, Parsed, parse};
use crate::Service;
use palaver_core::ports::{CommandStatus, Delivery, QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
use palaver_core::{StoreResult, TenantId};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How the consumer retries.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// The consumer group (`kafka.group_id`), shared by every node.
    pub group: String,
    /// Attempts at a command hit by transient failures before it is dead-lettered and failed.
    pub max_attempts: u32,
    /// The first retry's delay, doubled on each further one up to `backoff_max`.
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            group: "palaver".into(),
            max_attempts: 5,
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(10),
        }
    }
}

/// Resolves a command's tenant (`tenant_id` as a decimal string, or `tenant_code`) to an active tenant.
#[async_trait::async_trait]
pub trait TenantDirectory: Send + Sync {
    /// The active tenant so named, `None` if there is none; `Unavailable` when the registry is down.
    async fn resolve(&self, id: Option<&str>, code: Option<&str>) -> StoreResult<Option<TenantId>>;
}

/// The consumer of one node.
pub struct AdminConsumer {
    svc: Service,
    queue: Arc<dyn TaskQueue>,
    tenants: Arc<dyn TenantDirectory>,
    cfg: ConsumerConfig,
}

impl AdminConsumer {
    pub fn new(
        svc: Service,
        queue: Arc<dyn TaskQueue>,
        tenants: Arc<dyn TenantDirectory>,
        cfg: ConsumerConfig,
    ) -> Self {
        AdminConsumer { svc, queue, tenants, cfg }
    }

    /// Consumes until `stop` turns true. A record is committed only once it is settled; a stop in the middle of
    /// one leaves it uncommitted, to be redelivered.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut backoff = Backoff::new(&self.cfg);
        loop {
            let mut consumer = match self.queue.subscribe(QueueTopic::AdminCommand, &self.cfg.group).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "admin command consumer cannot subscribe; retrying");
                    if backoff.wait(&mut stop).await {
                        return;
                    }
                    continue;
                }
            };
            backoff.reset();
            if self.consume(consumer.as_mut(), &mut stop).await {
                return;
            }
        }
    }

    /// Reads and settles records until stopped (true) or the consumer fails (false: subscribe again).
    async fn consume(&self, consumer: &mut dyn QueueConsumer, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            let delivery = tokio::select! {
                d = consumer.next() => d,
                _ = stop.wait_for(|s| *s) => return true,
            };
            let delivery = match delivery {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(error = %e, "admin command consumer lost the queue");
                    return false;
                }
            };
            if !self.settle(&delivery, stop).await {
                return true;
            }
            // Committed only now that the record is settled: its effect and result are durable.
            let mut backoff = Backoff::new(&self.cfg);
            while let Err(e) = consumer.commit(&delivery).await {
                tracing::warn!(error = %e, offset = delivery.offset, "admin command commit failed; retrying");
                if backoff.wait(stop).await {
                    return true;
                }
            }
        }
    }

    /// Settles one record: its effect ran once (or it was rejected, or dead-lettered) and its result is durable.
    /// False if stopped first.
    pub async fn settle(&self, delivery: &Delivery, stop: &mut watch::Receiver<bool>) -> bool {
        let node = self.svc.config().node_id.clone();
        let cmd = match parse(&delivery.record.payload) {
            Parsed::Unreadable(error) => return self.dead_letter(delivery, &error, stop).await,
            Parsed::Invalid { command, reason, message } => {
                let tenant = self.tenants.resolve(command.tenant_id.as_deref(), command.tenant_code.as_deref()).await;
                let tenant = tenant.ok().flatten();
                let result = CommandResult::rejected(&command, tenant, reason, message, &node);
                return self.conclude(tenant, &command, result, stop).await;
            }
            Parsed::Command(c) => c,
        };
        let mut backoff = Backoff::new(&self.cfg);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let why = match self.tenants.resolve(cmd.tenant_id.as_deref(), cmd.tenant_code.as_deref()).await {
                Ok(None) => {
                    let message = format!(
                        "no active tenant {}",
                        cmd.tenant_id.clone().or_else(|| cmd.tenant_code.clone()).unwrap_or_default()
                    );
                    let result =
                        CommandResult::rejected(&cmd, None, palaver_api::Reason::UnknownTenant, message, &node);
                    return self.conclude(None, &cmd, result, stop).await;
                }
                Ok(Some(tenant)) => match self.svc.execute_admin_command(tenant, &cmd).await {
                    // The result is in the outbox with the ledger row; the relay produces it.
                    Outcome::Ran(_) => return true,
                    Outcome::Repeat(result) => return self.publish(result.record(), stop).await,
                    Outcome::Retry(why) => why,
                    Outcome::Busy(node) => {
                        // Not a failure of this command: another node runs it. Bounded by its lease.
                        attempts -= 1;
                        format!("running on node {node}")
                    }
                },
                Err(e) => format!("the tenant registry: {e}"),
            };
            if attempts >= self.cfg.max_attempts {
                tracing::warn!(command_id = %cmd.command_id, %why, attempts, "admin command failed for good");
                if !self.dead_letter(delivery, &why, stop).await {
                    return false;
                }
                let tenant = self.tenants.resolve(cmd.tenant_id.as_deref(), cmd.tenant_code.as_deref()).await;
                let tenant = tenant.ok().flatten();
                let message = format!("gave up after {attempts} attempts: {why}");
                let result = CommandResult::new(
                    &cmd,
                    tenant,
                    (CommandStatus::Failed, Some(palaver_api::Reason::RetriesExhausted)),
                    message,
                    &node,
                    json!({ "attempts": attempts }),
                );
                return self.conclude(tenant, &cmd, result, stop).await;
            }
            tracing::debug!(command_id = %cmd.command_id, %why, attempts, "admin command will be retried");
            if backoff.wait(stop).await {
                return false;
            }
        }
    }

    /// Stores a result the consumer decided (a rejection, a failure) with the ledger when the tenant is known,
    /// so a redelivery finds it; without a tenant database, or with storage down, it is produced directly.
    async fn conclude(
        &self,
        tenant: Option<TenantId>,
        cmd: &AdminCommand,
        result: CommandResult,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let label = if result.status() == CommandStatus::Rejected { "rejected" } else { "failed" };
        self.svc.metrics().admin_command(label);
        if let Some(t) = tenant {
            match self.svc.finish_admin_command(t, cmd, result.clone()).await {
                Outcome::Ran(_) => return true,
                Outcome::Repeat(stored) => return self.publish(stored.record(), stop).await,
                Outcome::Retry(why) | Outcome::Busy(why) => {
                    tracing::warn!(%why, "result not stored; producing it directly")
                }
            }
        }
        self.publish(result.record(), stop).await
    }

    /// Produces `record`, retrying with backoff until the queue holds it. False if stopped first.
    async fn publish(&self, record: QueueRecord, stop: &mut watch::Receiver<bool>) -> bool {
        let mut backoff = Backoff::new(&self.cfg);
        loop {
            match self.queue.produce(record.clone()).await {
                Ok(()) => return true,
                Err(e) => tracing::warn!(error = %e, topic = record.topic.as_str(), "produce failed; retrying"),
            }
            if backoff.wait(stop).await {
                return false;
            }
        }
    }

    /// Sends the record as it arrived to the dead-letter topic, with where it came from and why.
    async fn dead_letter(&self, delivery: &Delivery, error: &str, stop: &mut watch::Receiver<bool>) -> bool {
        self.svc.metrics().admin_command("dead_letter");
        tracing::warn!(partition = delivery.partition, offset = delivery.offset, %error, "admin command dead-lettered");
        let src = &delivery.record;
        let mut record = QueueRecord::new(QueueTopic::DeadLetter, src.key.clone(), src.payload.clone());
        record.headers = vec![
            ("source_topic".into(), QueueTopic::AdminCommand.as_str().into()),
            ("partition".into(), delivery.partition.to_string()),
            ("offset".into(), delivery.offset.to_string()),
            ("error".into(), error.chars().take(1000).collect()),
        ];
        self.publish(record, stop).await
    }
}

/// Doubling delays between retries, cut short by a stop.
struct Backoff {
    next: Duration,
    initial: Duration,
    max: Duration,
}

impl Backoff {
    fn new(cfg: &ConsumerConfig) -> Backoff {
        Backoff {
            next: cfg.backoff_initial,
            initial: cfg.backoff_initial,
            max: cfg.backoff_max.max(cfg.backoff_initial),
        }
    }

    fn reset(&mut self) {
        self.next = self.initial;
    }

    /// Sleeps the next delay; true if stopped meanwhile.
    async fn wait(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        if *stop.borrow() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => false,
            _ = stop.wait_for(|s| *s) => true,
        }
    }
}
