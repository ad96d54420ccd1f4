//! File security. An upload some scanner will look at (a whole-file scanner such as ClamAV is configured on the
//! node, or a `scan-file` plugin is enabled for the tenant) is stored `pending`, and its scan task goes to the
//! tenant's outbox in the same request, from where the relay moves it to the `file_security` queue topic
//! (`im.file.security`, or the embedded queue). The file-security worker hands each task to [`Files::scan`]:
//!
//! 1. the tenant's `scan-file` plugins judge the record and the first `files.scan_head_bytes` bytes;
//! 2. unless they blocked it, the whole-file scanner reads every byte (streamed, never held whole);
//! 3. the strictest verdict settles the file: `clean` is served; `blocked` answers 451 from then on and every
//!    user who could read it hears `file.unavailable`; `review` leaves it `pending` for an operator
//!    (`file.audit.update`) and tells the Admin side (`file.review` summary).
//!
//! Settling is one conditional write on a still-pending file, so a repeated task changes nothing and an
//! operator's decision made while the scan ran stands. Each conclusion is audited (`file.scan`).

use super::Files;
use crate::backbone::Summary;
use crate::delivery::event::BusinessTarget;
use crate::error::{ServiceError, ServiceResult};
use futures_util::StreamExt;
use palaver_core::ports::{BlobError, FileRecord, FileStatus, QueueRecord, QueueTopic, ScanContext, ScanVerdict};
use palaver_core::{TenantId, now_millis};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The most referencing topics a blocked file's `file.unavailable` event reaches.
const MAX_NOTIFIED_TOPICS: usize = 1000;

/// A scan task as it travels on the queue: `{"tenant_id":"1","file":"<id>","at":<unix ms>}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileScanTask {
    /// The tenant, as a decimal string (as every queue record names it).
    pub tenant_id: String,
    pub file: String,
    /// Unix ms of the upload.
    pub at: i64,
}

/// The record that asks for `file` to be scanned: keyed by tenant and file, so a file's tasks keep their order.
pub fn scan_record(tenant: TenantId, file: &FileRecord) -> QueueRecord {
    let task = FileScanTask { tenant_id: tenant.0.to_string(), file: file.id.clone(), at: file.created };
    let payload = serde_json::to_vec(&task).unwrap_or_default();
    let mut record = QueueRecord::new(QueueTopic::FileSecurity, format!("{}:{}", tenant.0, file.id), payload);
    record.headers = vec![("tenant".to_owned(), tenant.0.to_string()), ("file".to_owned(), file.id.clone())];
    record
}

impl Files<'_> {
    /// Scans a pending file and settles it; `None` when there is nothing to do (the file is gone, or settled
    /// already). `Unavailable` when a store or the scanner failed: the worker tries the task again.
    pub(crate) async fn scan(&self, id: &str) -> ServiceResult<Option<ScanVerdict>> {
        let Some(file) = self.svc.ports.files.get_file(self.tenant, id).await? else { return Ok(None) };
        if file.status != FileStatus::Pending {
            return Ok(None);
        }
        let mut verdict = ScanVerdict::Clean;
        let mut scanners = Vec::new();
        let hook = &self.svc.ports.scan_hook;
        if hook.scans(self.tenant) {
            let Some(head) = self.head(&file).await? else { return self.missing(&file).await };
            verdict = hook.scan_file(&ScanContext { tenant: self.tenant, file: &file, head: &head }).await;
            scanners.push("plugins");
        }
        if let Some(scanner) = &self.svc.ports.scanner
            && !matches!(verdict, ScanVerdict::Blocked { .. })
        {
            let key = palaver_core::ports::blob_key(self.tenant, id);
            let body = match self.svc.ports.blobs.get_blob(&key, None).await {
                Ok(read) => read.body,
                Err(BlobError::NotFound) => return self.missing(&file).await,
                Err(e) => return Err(unavailable(e.to_string())),
            };
            let found = scanner.scan(&file, body).await.map_err(|e| unavailable(e.to_string()))?;
            verdict = verdict.and(found);
            scanners.push(scanner.name());
        }
        self.settle(&file, &verdict, &scanners).await?;
        Ok(Some(verdict))
    }

    /// The file's first bytes, up to `files.scan_head_bytes`; `None` when its object is missing.
    async fn head(&self, file: &FileRecord) -> ServiceResult<Option<Vec<u8>>> {
        let want = (self.svc.cfg.files.scan_head_bytes as u64).min(file.size);
        if want == 0 {
            return Ok(Some(Vec::new()));
        }
        let key = palaver_core::ports::blob_key(self.tenant, &file.id);
        let mut body = match self.svc.ports.blobs.get_blob(&key, Some((0, Some(want)))).await {
            Ok(read) => read.body,
            Err(BlobError::NotFound) => return Ok(None),
            Err(e) => return Err(unavailable(e.to_string())),
        };
        let mut head = Vec::with_capacity(want as usize);
        while let Some(chunk) = body.next().await {
            head.extend_from_slice(&chunk.map_err(|e| unavailable(e.to_string()))?);
        }
        head.truncate(want as usize);
        Ok(Some(head))
    }

    /// A record whose bytes are gone cannot be scanned: it goes to an operator rather than being served.
    async fn missing(&self, file: &FileRecord) -> ServiceResult<Option<ScanVerdict>> {
        tracing::warn!(tenant = self.tenant.0, file = %file.id, "a pending file has no object; left for review");
        let verdict = ScanVerdict::Review { reason: "the file's bytes are missing".into() };
        self.settle(file, &verdict, &[]).await?;
        Ok(Some(verdict))
    }

    /// Applies a scan's verdict to a still-pending file, audits it, and tells whoever must know.
    async fn settle(&self, file: &FileRecord, verdict: &ScanVerdict, scanners: &[&str]) -> ServiceResult<()> {
        let files = &self.svc.ports.files;
        let settled = match verdict {
            ScanVerdict::Clean => files.settle_pending_file(self.tenant, &file.id, FileStatus::Clean).await?,
            ScanVerdict::Blocked { reason } => {
                let blocked = files.settle_pending_file(self.tenant, &file.id, FileStatus::Blocked).await?;
                if blocked {
                    self.announce_blocked(file, reason).await?;
                }
                blocked
            }
            ScanVerdict::Review { reason } => {
                let data = json!({ "file": file.id, "uploader": file.uploader.to_string(), "reason": reason });
                self.svc.summary(self.tenant, Summary::new("file.review", "file", file.id.clone(), data)).await;
                true
            }
        };
        if !settled {
            // An operator or an earlier run of this task settled it meanwhile: theirs stands.
            return Ok(());
        }
        self.svc.metrics.file_scanned(verdict.as_str());
        let detail = json!({ "verdict": verdict.as_str(), "reason": verdict.reason(), "scanners": scanners });
        let target = ("file", file.id.clone());
        self.svc.audit_action(self.tenant, "file.scan", ("system", None), target, |e| e.with_detail(detail)).await;
        Ok(())
    }

    /// Tells everyone who could read a file that was just blocked, `file.unavailable`: the sessions attached to
    /// the topics whose messages reference it (up to [`MAX_NOTIFIED_TOPICS`]) and its uploader's sessions, on
    /// every node. Returns how many topics were told.
    pub(crate) async fn announce_blocked(&self, file: &FileRecord, reason: &str) -> ServiceResult<usize> {
        let event = unavailable_event(file, reason);
        let topics = self.svc.ports.files.file_topics(self.tenant, &file.id, MAX_NOTIFIED_TOPICS).await?;
        for topic in &topics {
            self.svc.emit_business(self.tenant, BusinessTarget::Topic(topic.clone()), "file.unavailable", &event, None);
        }
        self.svc.emit_business(self.tenant, BusinessTarget::User(file.uploader), "file.unavailable", &event, None);
        Ok(topics.len())
    }

    /// Tells the sessions attached to `topic` that a file its new message references is blocked.
    pub(super) fn announce_to(&self, file: &FileRecord, topic: &str, reason: &str) {
        let event = unavailable_event(file, reason);
        self.svc.emit_business(self.tenant, BusinessTarget::Topic(topic.to_owned()), "file.unavailable", &event, None);
    }
}

/// The `file.unavailable` business event's payload.
fn unavailable_event(file: &FileRecord, reason: &str) -> serde_json::Value {
    json!({
        "file": file.id,
        "url": super::file_url(file),
        "status": FileStatus::Blocked.as_str(),
        "reason": reason,
        "at": now_millis(),
    })
}

fn unavailable(reason: String) -> ServiceError {
    ServiceError::Unavailable { reason, retry_after_ms: 1000 }
}
