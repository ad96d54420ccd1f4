//! Push devices: `{hi dev platf}` after login registers the session's push token for its user, `dev:"␡"` removes
//! it. The device id is a hash of the token, so the same token registered again replaces its row, and a token
//! another user registered moves to this one.

use crate::Inner;
use crate::error::{ServiceError, ServiceResult};
use palaver_core::ports::Device;
use palaver_core::{TenantId, UserId, now_millis};
use sha2::{Digest, Sha256};

/// The longest token accepted, in bytes (FCM tokens are ~160, APNs 64 hex digits).
pub(crate) const MAX_TOKEN: usize = 4096;

/// The device id of a token: the first 16 bytes of its SHA-256, in hex.
pub(crate) fn device_id(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// What a client said about its device.
pub(crate) struct DeviceInfo<'a> {
    pub(crate) token: &'a str,
    pub(crate) platform: Option<&'a str>,
    pub(crate) app: Option<&'a str>,
    pub(crate) language: Option<&'a str>,
}

/// The device use cases of one tenant.
pub(crate) struct Devices<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Devices<'_> {
    /// Registers (or refreshes) the user's device and returns its id; `None` (nothing stored) when push is off
    /// or no provider is configured for its platform. Refused when the token is too long (413) or beyond
    /// `push.max_devices_per_user` (422).
    pub(crate) async fn register(&self, user: UserId, info: DeviceInfo<'_>) -> ServiceResult<Option<String>> {
        let cfg = &self.svc.cfg.push;
        if info.token.len() > MAX_TOKEN {
            return Err(ServiceError::TooLarge(format!("hi.dev is at most {MAX_TOKEN} bytes")));
        }
        let platform: String = info.platform.unwrap_or_default().to_ascii_lowercase().chars().take(32).collect();
        if !cfg.enabled {
            return Ok(None);
        }
        let push = self.svc.push_tenants.get(self.tenant).await;
        let provider = match push.provider_for(&platform) {
            Some(p) if push.enabled => p.to_owned(),
            _ => return Ok(None),
        };
        let id = device_id(info.token);
        let store = &self.svc.ports.devices;
        let known = store.list_devices(self.tenant, user).await?.iter().any(|d| d.device_id == id);
        let max = cfg.max_devices_per_user;
        if !known && max > 0 && store.count_devices(self.tenant, user).await? >= max {
            return Err(ServiceError::Policy(format!("a user may register at most {max} push devices")));
        }
        let device = Device {
            user,
            device_id: id.clone(),
            platform,
            provider,
            token: info.token.to_owned(),
            app: info.app.unwrap_or_default().chars().take(255).collect(),
            language: info.language.unwrap_or_default().chars().take(32).collect(),
            last_seen: now_millis(),
        };
        let stored = store.upsert_device(self.tenant, &device).await;
        self.svc.push.devices.changed();
        stored?;
        Ok(Some(id))
    }

    /// Removes the user's device with this token; true if it existed.
    pub(crate) async fn remove(&self, user: UserId, token: &str) -> ServiceResult<bool> {
        let removed = self.svc.ports.devices.delete_device(self.tenant, user, &device_id(token)).await;
        self.svc.push.devices.changed();
        Ok(removed?)
    }
}
