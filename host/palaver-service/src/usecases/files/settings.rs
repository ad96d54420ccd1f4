//! A tenant's own file limits over the node's `[files]`: the `files` settings document the admin API writes
//! (`GET`/`PUT /v1/admin/tenants/{t}/files`), checked as it is set and read by each upload, so every node applies
//! a change from its next upload.

use super::{Files, FilesConfig, mime_pattern_ok};
use crate::error::{ServiceError, ServiceResult};
use palaver_api::bodies::admin::{FileSettings, PendingReaders, TenantFiles};

/// The settings document of a tenant's own file limits (`PUT /v1/admin/tenants/{t}/files`).
const FILES_SETTING: &str = "files";

/// The limits in force for one tenant: its own settings over the node's `[files]`.
pub(super) struct Limits {
    pub(super) max_upload_size: u64,
    pub(super) max_uploads_per_hour: u64,
    pub(super) allowed_mime: Vec<String>,
    pub(super) pending_readers: PendingReaders,
}

impl Limits {
    /// The node's limits with the tenant's own on top; an upload size above the node's is held to it.
    pub(super) fn of(cfg: &FilesConfig, own: &FileSettings) -> Limits {
        Limits {
            max_upload_size: own.max_upload_size.map_or(cfg.max_upload_size, |n| n.min(cfg.max_upload_size)),
            max_uploads_per_hour: own.max_uploads_per_hour.unwrap_or(cfg.max_uploads_per_hour),
            allowed_mime: own.allowed_mime.clone().unwrap_or_else(|| cfg.allowed_mime.clone()),
            pending_readers: own.pending_readers.unwrap_or(cfg.pending_readers),
        }
    }
}

/// Refuses file settings that cannot work: a zero upload size, a MIME pattern that is not `type/subtype`.
fn check_settings(own: &FileSettings) -> ServiceResult<()> {
    if own.max_upload_size == Some(0) {
        return Err(ServiceError::Malformed("max_upload_size must be at least 1".into()));
    }
    let bad = own.allowed_mime.iter().flatten().find(|m| !mime_pattern_ok(m));
    match bad {
        Some(m) => Err(ServiceError::Malformed(format!("allowed_mime: {m:?} is not a lower-case type/subtype"))),
        None => Ok(()),
    }
}

impl Files<'_> {
    /// The tenant's own file settings (none stored: all the node's).
    pub(super) async fn own_settings(&self) -> ServiceResult<FileSettings> {
        match self.svc.ports.settings.get_setting(self.tenant, FILES_SETTING).await? {
            None => Ok(FileSettings::default()),
            Some(doc) => serde_json::from_value(doc).map_err(|e| ServiceError::Internal(format!("file settings: {e}"))),
        }
    }

    /// The limits in force and the tenant's own settings, as the admin API shows them.
    pub(crate) async fn settings(&self) -> ServiceResult<TenantFiles> {
        let own = self.own_settings().await?;
        let limits = Limits::of(&self.svc.cfg.files, &own);
        Ok(TenantFiles {
            tenant: self.tenant.0,
            max_upload_size: limits.max_upload_size,
            max_uploads_per_hour: limits.max_uploads_per_hour,
            allowed_mime: limits.allowed_mime,
            pending_readers: limits.pending_readers,
            scanned: self.scanned(),
            settings: own,
        })
    }

    /// Changes the tenant's own file settings: each top-level field of `change` replaces the stored one, and
    /// `null` removes it (the node's applies again). The result must read as [`FileSettings`], or nothing changes.
    /// Uploads read it as they start, on every node.
    pub(crate) async fn set_settings(&self, change: &serde_json::Value) -> ServiceResult<TenantFiles> {
        let store = &self.svc.ports.settings;
        let (own, doc): (FileSettings, _) =
            crate::usecases::settings::merged(store.as_ref(), self.tenant, FILES_SETTING, "file settings", change)
                .await?;
        check_settings(&own)?;
        store.put_setting(self.tenant, FILES_SETTING, doc.as_ref()).await?;
        self.settings().await
    }
}
