//! A tenant's own file limits over the node's `[files]`: the `files` settings document the admin API writes
//! (`GET`/`PUT /v1/admin/tenants/{t}/files`), checked as it is set and read by each upload, so every node applies
//! a change from its next upload.

use super::{Files, FilesConfig, clean_mime};
use crate::error::{ServiceError, ServiceResult};
use palaver_api::bodies::admin::{FileSettings, TenantFiles};
use palaver_core::ports::MAX_SETTING_BYTES;

/// The settings document of a tenant's own file limits (`PUT /v1/admin/tenants/{t}/files`).
const FILES_SETTING: &str = "files";

/// The limits in force for one tenant: its own settings over the node's `[files]`.
pub(super) struct Limits {
    pub(super) max_upload_size: u64,
    pub(super) max_uploads_per_hour: u64,
    pub(super) allowed_mime: Vec<String>,
}

impl Limits {
    /// The node's limits with the tenant's own on top; an upload size above the node's is held to it.
    pub(super) fn of(cfg: &FilesConfig, own: &FileSettings) -> Limits {
        Limits {
            max_upload_size: own.max_upload_size.map_or(cfg.max_upload_size, |n| n.min(cfg.max_upload_size)),
            max_uploads_per_hour: own.max_uploads_per_hour.unwrap_or(cfg.max_uploads_per_hour),
            allowed_mime: own.allowed_mime.clone().unwrap_or_else(|| cfg.allowed_mime.clone()),
        }
    }
}

/// Refuses file settings that cannot work: a zero upload size, a MIME pattern that is not `type/subtype`.
fn check_settings(own: &FileSettings) -> ServiceResult<()> {
    if own.max_upload_size == Some(0) {
        return Err(ServiceError::Malformed("max_upload_size must be at least 1".into()));
    }
    // A pattern is valid when it is already in the stored form (`image/*` as its family would be).
    let valid = |m: &str| match m.split_once('/') {
        Some((family, "*")) => clean_mime(&format!("{family}/x")) == format!("{family}/x"),
        Some(_) => clean_mime(m) == m,
        None => false,
    };
    let bad = own.allowed_mime.iter().flatten().find(|m| !valid(m));
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
            settings: own,
        })
    }

    /// Changes the tenant's own file settings: each top-level field of `change` replaces the stored one, and
    /// `null` removes it (the node's applies again). The result must read as [`FileSettings`], or nothing changes.
    /// Uploads read it as they start, on every node.
    pub(crate) async fn set_settings(&self, change: &serde_json::Value) -> ServiceResult<TenantFiles> {
        let Some(change) = change.as_object() else {
            return Err(ServiceError::Malformed("file settings must be a JSON object".into()));
        };
        let store = &self.svc.ports.settings;
        let mut doc = match store.get_setting(self.tenant, FILES_SETTING).await? {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for (k, v) in change {
            match v {
                serde_json::Value::Null => doc.remove(k),
                v => doc.insert(k.clone(), v.clone()),
            };
        }
        let doc = serde_json::Value::Object(doc);
        let own: FileSettings =
            serde_json::from_value(doc.clone()).map_err(|e| ServiceError::Malformed(format!("file settings: {e}")))?;
        check_settings(&own)?;
        if doc.to_string().len() > MAX_SETTING_BYTES {
            return Err(ServiceError::TooLarge(format!("file settings are at most {MAX_SETTING_BYTES} bytes")));
        }
        let empty = doc.as_object().is_some_and(|m| m.is_empty());
        store.put_setting(self.tenant, FILES_SETTING, (!empty).then_some(&doc)).await?;
        self.settings().await
    }
}
