//! The file-security worker: one consumer group across the nodes reads the `file_security` topic
//! (`im.file.security`, or the embedded queue) and scans each pending upload it names (`usecases::files::scan`).
//!
//! **Failures.** A scanner or store that is unavailable is retried with exponential backoff up to
//! `max_attempts`; then the task goes to the dead-letter topic with the reason, the file stays `pending` (served
//! to its uploader only, or as its tenant's `pending_readers` says) and it is counted as `failed`: a file no
//! scanner could look at is never served as clean. An operator settles it with `file.audit.update`, or the task
//! is produced again. A task that cannot be read goes to the dead-letter topic at once.
//!
//! **Once.** The offset is committed after each task. A crash between the scan and the commit hands the task
//! out again; the file is no longer pending by then, so the repeat does nothing.

use crate::Service;
use crate::usecases::files::FileScanTask;
use palaver_core::ports::{Delivery, QueueRecord, QueueTopic, TaskQueue};
use palaver_core::{StoreResult, TenantId};
use std::sync::Arc;
use std::time::Duration;

/// How the worker consumes and retries.
#[derive(Debug, Clone)]
pub struct ScanWorkerConfig {
    /// The consumer group (every node uses the same one).
    pub group: String,
    /// Attempts per task before an unavailable scanner is recorded as final.
    pub max_attempts: u32,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

impl Default for ScanWorkerConfig {
    fn default() -> Self {
        ScanWorkerConfig {
            group: "palaver-file-security".into(),
            max_attempts: 5,
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// The file-security topic's consumer.
#[derive(Clone)]
pub struct ScanWorker {
    service: Service,
    queue: Arc<dyn TaskQueue>,
    cfg: ScanWorkerConfig,
}

impl ScanWorker {
    pub fn new(service: Service, queue: Arc<dyn TaskQueue>, cfg: ScanWorkerConfig) -> ScanWorker {
        ScanWorker { service, queue, cfg }
    }

    /// Runs the consumer; aborting the handle stops it.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }

    /// Consumes until the task is aborted, joining the group again after a queue failure.
    pub async fn run(self) {
        super::keep_consuming("file-security worker", &self.cfg.group, || self.consume()).await;
    }

    async fn consume(&self) -> StoreResult<()> {
        let mut consumer = self.queue.subscribe(QueueTopic::FileSecurity, &self.cfg.group).await?;
        loop {
            let delivery = consumer.next().await?;
            self.handle(&delivery).await?;
            if let Err(err) = consumer.commit(&delivery).await {
                tracing::warn!(%err, offset = delivery.offset, "file-security worker: commit failed; the task will repeat");
            }
        }
    }

    /// Scans one task's file, retrying while the scanner is unavailable. `Err` only when the dead-letter topic
    /// refused the record (the task is then not committed and comes back).
    async fn handle(&self, delivery: &Delivery) -> StoreResult<()> {
        let Some((tenant, id)) = read_task(&delivery.record) else {
            return self.dead_letter(delivery, "unreadable file-security task").await;
        };
        let files = self.service.inner.files(tenant);
        let mut wait = self.cfg.backoff_initial;
        let mut attempt = 1;
        loop {
            match files.scan(&id).await {
                Ok(verdict) => {
                    if let Some(v) = verdict {
                        tracing::debug!(tenant = tenant.0, file = %id, verdict = v.as_str(), "file scanned");
                    }
                    return Ok(());
                }
                Err(err) if attempt < self.cfg.max_attempts => {
                    tracing::info!(%err, tenant = tenant.0, file = %id, attempt, "file scan failed; trying again");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(self.cfg.backoff_max);
                    attempt += 1;
                }
                Err(err) => {
                    self.service.inner.metrics.file_scanned("failed");
                    return self.dead_letter(delivery, &format!("scan failed {attempt} times: {err}")).await;
                }
            }
        }
    }

    /// Records a task that could not be done on the dead-letter topic, the reason in its headers.
    async fn dead_letter(&self, delivery: &Delivery, reason: &str) -> StoreResult<()> {
        tracing::warn!(reason, offset = delivery.offset, "file-security task sent to the dead-letter topic");
        self.queue.produce(delivery.dead_letter(reason)).await
    }
}

/// The tenant and file a task names; `None` when the payload does not read as a task or its tenant disagrees
/// with the record's `tenant` header (a record is never applied to a tenant it was not written for).
fn read_task(record: &QueueRecord) -> Option<(TenantId, String)> {
    let task: FileScanTask = serde_json::from_slice(&record.payload).ok()?;
    let tenant = TenantId(task.tenant_id.parse().ok()?);
    if record.header("tenant").is_some_and(|h| h != task.tenant_id) {
        return None;
    }
    Some((tenant, task.file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_read_with_their_tenant_checked() {
        let file = palaver_core::ports::FileRecord {
            id: "F".into(),
            uploader: palaver_core::UserId(1),
            size: 1,
            mime: "a/b".into(),
            name: String::new(),
            sha256: String::new(),
            status: palaver_core::ports::FileStatus::Pending,
            public: false,
            created: 5,
        };
        let record = crate::usecases::files::scan_record(TenantId(7), &file);
        assert_eq!(record.key, "7:F");
        assert_eq!(read_task(&record), Some((TenantId(7), "F".to_owned())));
        let mut forged = record.clone();
        forged.headers = vec![("tenant".into(), "8".into())];
        assert_eq!(read_task(&forged), None, "a payload naming another tenant than its header");
        let garbage = QueueRecord::new(QueueTopic::FileSecurity, "k", b"{".to_vec());
        assert_eq!(read_task(&garbage), None);
    }
}
