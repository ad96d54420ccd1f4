//! Files (`[files]`): where uploaded bytes live — a directory under `data_dir` (the embedded default) or an
//! S3-compatible bucket (what a cluster needs: every node reads what another stored) — the limits the service
//! enforces, and the collection of uploads no message referenced within the grace period, which every node
//! runs for every active tenant (its removals are conditional, so two nodes collecting at once remove each
//! file once), and file security (`[files.scan]`): ClamAV through `clamd` when an address is set.

use palaver_api::bodies::admin::PendingReaders;
use palaver_blobs::{ObjectBlobs, S3Config};
use palaver_core::ports::{BlobStore, FileScanner, TenantStore};
use palaver_service::{FilesConfig, Service};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the bytes live.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FileStoreKind {
    /// `files.dir`, or `files` in the data directory.
    #[default]
    Fs,
    /// The bucket of `[files.s3]`.
    S3,
}

/// `[files]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FilesSection {
    /// Accept uploads (`/v0/file/u/`); stored files stay readable when off.
    pub enabled: bool,
    /// The largest upload in bytes (advertised in `{hi}` as `maxFileUploadSize`).
    pub max_upload_size: u64,
    /// Uploads one user may make in an hour; 0: no limit.
    pub max_uploads_per_hour: u64,
    /// MIME types accepted (`image/*` takes a family); empty: any.
    pub allowed_mime: Vec<String>,
    /// Uploads streaming through this node at once; more are answered 503.
    pub max_concurrent_uploads: usize,
    /// Attachments of one message that are recorded (`extra.attachments`); more are ignored.
    pub max_attachments: usize,
    /// An upload that no message references and that is not an avatar is removed after this many seconds.
    pub gc_grace_seconds: u64,
    /// How often each node looks for such uploads, in seconds.
    pub gc_interval_seconds: u64,
    /// Uploads removed per tenant and pass at most.
    pub gc_batch: usize,
    pub store: FileStoreKind,
    /// The directory of the `fs` store; empty: `files` in the data directory.
    pub dir: PathBuf,
    /// The bucket of `store = "s3"` (`[files.s3]`).
    pub s3: S3Config,
    /// Who may download a file still being scanned, for tenants that do not say: `uploader` (everyone else who
    /// may read it gets 503 until the scan ends) or `readers`.
    pub pending_readers: PendingReaders,
    /// File security (`[files.scan]`).
    pub scan: ScanSection,
}

/// `[files.scan]`: what looks at uploads before they are served. Uploads are scanned when `clamd` is set or a
/// `scan-file` plugin is enabled for the tenant; otherwise they are served at once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ScanSection {
    /// clamd's address, `tcp://host:port` or `unix:/path/to/clamd.ctl`; empty: no ClamAV.
    pub clamd: String,
    /// The longest a clamd connection step may take, in ms.
    pub clamd_timeout_ms: u64,
    /// Files larger than this are not sent to clamd and wait for an operator's review; keep it at most clamd's
    /// `StreamMaxLength`.
    pub clamd_max_bytes: u64,
    /// The first bytes of a file handed to `scan-file` plugins.
    pub head_bytes: usize,
    /// Attempts per task while the scanner is unavailable; then the task is dead-lettered and the file stays
    /// pending.
    pub max_attempts: u32,
    pub retry_backoff_ms: u64,
    pub retry_backoff_max_ms: u64,
}

impl Default for ScanSection {
    fn default() -> Self {
        let clamd = palaver_clamav::ClamdConfig::default();
        let worker = palaver_service::ScanWorkerConfig::default();
        ScanSection {
            clamd: String::new(),
            clamd_timeout_ms: clamd.timeout.as_millis() as u64,
            clamd_max_bytes: clamd.max_bytes,
            head_bytes: FilesConfig::default().scan_head_bytes,
            max_attempts: worker.max_attempts,
            retry_backoff_ms: worker.backoff_initial.as_millis() as u64,
            retry_backoff_max_ms: worker.backoff_max.as_millis() as u64,
        }
    }
}

impl ScanSection {
    fn clamd_config(&self) -> palaver_clamav::ClamdConfig {
        palaver_clamav::ClamdConfig {
            address: self.clamd.clone(),
            timeout: Duration::from_millis(self.clamd_timeout_ms),
            max_bytes: self.clamd_max_bytes,
            ..palaver_clamav::ClamdConfig::default()
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.max_attempts == 0 || self.retry_backoff_ms == 0 || self.head_bytes == 0 {
            return Err("files.scan.max_attempts, retry_backoff_ms and head_bytes must be at least 1".into());
        }
        if self.head_bytes > MAX_HEAD_BYTES {
            return Err(format!("files.scan.head_bytes is at most {MAX_HEAD_BYTES} (it is copied into each plugin)"));
        }
        if !self.clamd.is_empty() {
            self.clamd_config().validate().map_err(|e| format!("files.scan.clamd: {e}"))?;
        }
        Ok(())
    }

    /// The whole-file scanner: clamd when its address is set.
    pub fn scanner(&self) -> anyhow::Result<Option<Arc<dyn FileScanner>>> {
        if self.clamd.is_empty() {
            return Ok(None);
        }
        let clamd = palaver_clamav::Clamd::new(self.clamd_config()).map_err(|e| anyhow::anyhow!("{e}"))?;
        tracing::info!(clamd = %self.clamd, "uploads are scanned by ClamAV");
        Ok(Some(Arc::new(clamd)))
    }
}

/// The largest `files.scan.head_bytes`: the head is copied into every plugin's memory.
const MAX_HEAD_BYTES: usize = 4 * 1024 * 1024;

impl Default for FilesSection {
    fn default() -> Self {
        let service = FilesConfig::default();
        FilesSection {
            enabled: service.enabled,
            max_upload_size: service.max_upload_size,
            max_uploads_per_hour: service.max_uploads_per_hour,
            allowed_mime: service.allowed_mime,
            max_concurrent_uploads: service.max_concurrent_uploads,
            max_attachments: service.max_attachments,
            gc_grace_seconds: service.gc_grace.as_secs(),
            gc_interval_seconds: 3600,
            gc_batch: 500,
            store: FileStoreKind::Fs,
            dir: PathBuf::new(),
            s3: S3Config::default(),
            pending_readers: service.pending_readers,
            scan: ScanSection::default(),
        }
    }
}

impl FilesSection {
    /// Refuses settings that cannot work.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_upload_size == 0 {
            return Err("files.max_upload_size must be at least 1".into());
        }
        if self.max_concurrent_uploads == 0 || self.gc_interval_seconds == 0 || self.gc_batch == 0 {
            return Err(
                "files.max_concurrent_uploads, files.gc_interval_seconds and files.gc_batch must be at least 1".into(),
            );
        }
        if let Some(bad) = self.allowed_mime.iter().find(|m| !palaver_service::mime_pattern_ok(m)) {
            return Err(format!("files.allowed_mime: {bad:?} is not a lower-case type/subtype (or type/*)"));
        }
        self.scan.validate()?;
        if self.store == FileStoreKind::S3 {
            let s3 = &self.s3;
            if s3.bucket.is_empty() || s3.access_key_id.is_empty() || s3.secret_access_key.is_empty() {
                return Err("files.store = \"s3\" needs files.s3.bucket, access_key_id and secret_access_key".into());
            }
        }
        Ok(())
    }

    /// The service's view of these settings.
    pub fn service(&self) -> FilesConfig {
        FilesConfig {
            enabled: self.enabled,
            max_upload_size: self.max_upload_size,
            max_uploads_per_hour: self.max_uploads_per_hour,
            allowed_mime: self.allowed_mime.clone(),
            max_concurrent_uploads: self.max_concurrent_uploads,
            gc_grace: Duration::from_secs(self.gc_grace_seconds),
            max_attachments: self.max_attachments,
            pending_readers: self.pending_readers,
            scan_head_bytes: self.scan.head_bytes,
        }
    }

    /// The configured blob store.
    pub fn open(&self, data_dir: &Path) -> anyhow::Result<Arc<dyn BlobStore>> {
        Ok(match self.store {
            FileStoreKind::Fs => {
                let dir = if self.dir.as_os_str().is_empty() { data_dir.join("files") } else { self.dir.clone() };
                Arc::new(ObjectBlobs::local(&dir).map_err(|e| anyhow::anyhow!("files.dir {}: {e}", dir.display()))?)
            }
            FileStoreKind::S3 => Arc::new(ObjectBlobs::s3(&self.s3).map_err(|e| anyhow::anyhow!("files.s3: {e}"))?),
        })
    }
}

/// Starts the collection of unreferenced uploads; the task runs until aborted.
pub(crate) fn spawn_collector(
    service: Service,
    tenants: Option<Arc<dyn TenantStore>>,
    every: Duration,
    batch: usize,
) -> tokio::task::JoinHandle<()> {
    crate::every::spawn(every, move || {
        let (service, tenants) = (service.clone(), tenants.clone());
        async move { collect_once(&service, tenants.as_deref(), batch).await }
    })
}

/// One pass over every active tenant; a registry that cannot answer skips this pass (logged).
async fn collect_once(service: &Service, tenants: Option<&dyn TenantStore>, batch: usize) {
    let ids = match palaver_service::backbone::active_tenants(tenants).await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "file collection: the tenants cannot be listed");
            return;
        }
    };
    for tenant in ids {
        match service.collect_files(tenant, batch).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(%tenant, removed = n, "removed uploads that no message referenced"),
            Err(e) => tracing::warn!(%tenant, error = %e, "file collection failed"),
        }
    }
}
