//! The delay poller: every second, the worker claims the delayed pushes that fell due (in every active tenant,
//! a batch at a time, each claim held for a minute) and sends them to the recipient's devices as they are now,
//! then removes them. Any node's worker may claim a push; the claim keeps two from sending one, and a node that
//! dies holding a claim leaves its pushes to the next claim after the lease (sent once more at worst, never lost).

use super::PushWorker;
use palaver_core::ports::{DelayedPush, Delivery, QueueRecord, QueueTopic};
use palaver_core::{StoreResult, TenantId};
use std::time::Duration;

/// How often due pushes are looked for: the resolution of a delay.
const POLL: Duration = Duration::from_secs(1);
/// How long a claim holds its pushes while they are sent.
const LEASE_MS: i64 = 60_000;
/// The most pushes one claim takes.
const BATCH: usize = 100;

impl PushWorker {
    /// Sends due delayed pushes until the task is dropped.
    pub(super) async fn poll_delayed(self) {
        loop {
            tokio::time::sleep(POLL).await;
            let tenants = match self.tenant_ids().await {
                Ok(t) => t,
                Err(err) => {
                    tracing::warn!(%err, "delayed pushes: the tenants cannot be listed");
                    continue;
                }
            };
            for tenant in tenants {
                if let Err(err) = self.send_due(tenant).await {
                    tracing::warn!(%tenant, %err, "delayed pushes not sent; retried on the next poll");
                }
            }
        }
    }

    async fn tenant_ids(&self) -> StoreResult<Vec<TenantId>> {
        crate::backbone::active_tenants(self.tenants.as_deref()).await
    }

    /// Claims and sends the tenant's due pushes, a batch at a time.
    pub(crate) async fn send_due(&self, tenant: TenantId) -> StoreResult<usize> {
        let ports = &self.service.inner.ports;
        let owner = self.service.inner.cfg.node_id.clone();
        let mut sent = 0;
        loop {
            let now = palaver_core::now_millis();
            let claimed = ports.devices.claim_delayed(tenant, &owner, now, LEASE_MS, BATCH).await?;
            let full = claimed.len() == BATCH;
            let mut done = Vec::with_capacity(claimed.len());
            for (id, push) in claimed {
                self.send_delayed(&push).await?;
                done.push(id);
                sent += 1;
            }
            ports.devices.remove_delayed(tenant, &done).await?;
            if !full {
                return Ok(sent);
            }
        }
    }

    /// Sends one delayed push to its recipient's devices as they are now (the sending device of a message still
    /// excepted for its sender); failures are retried and recorded as any push's.
    async fn send_delayed(&self, push: &DelayedPush) -> StoreResult<()> {
        let task = &push.task;
        let devices = self.service.inner.ports.devices.list_devices(task.tenant, push.recipient).await?;
        let sender = push.recipient == task.from;
        // What a dead letter of this push names: the task as it was queued.
        let payload = serde_json::to_vec(task).unwrap_or_default();
        let record = QueueRecord::new(QueueTopic::Push, format!("{}:{}", task.topic, task.seq), payload);
        let delivery = Delivery { record, partition: -1, offset: -1 };
        let tenant_push = self.service.inner.push_tenants.get(task.tenant).await;
        for device in devices.iter().filter(|d| !(sender && task.sender_device.as_deref() == Some(&d.device_id))) {
            self.send(task, &tenant_push, device, &push.message, &delivery).await?;
        }
        Ok(())
    }
}
