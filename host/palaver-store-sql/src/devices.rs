//! The device table's shared parts: the row both adapters select from `im_devices` (each writes its own select
//! list, since MariaDB converts its `DATETIME(3)` in SQL), how it becomes a [`Device`], and the binds of an upsert.

use crate::columns::user_of;
use palaver_core::ports::Device;

/// An `im_devices` row: `device_id, user_id, platform, provider, token, app, language, last_seen` (Unix ms).
pub type DeviceRow = (String, i64, String, String, String, String, String, i64);

/// The device a row holds.
pub fn device_of((device_id, user, platform, provider, token, app, language, last_seen): DeviceRow) -> Device {
    Device { user: user_of(user), device_id, platform, provider, token, app, language, last_seen }
}

/// Binds a [`Device`]'s columns in the order of [`DeviceRow`] (after SQLite's `tenant_id`).
#[macro_export]
macro_rules! bind_device {
    ($query:expr, $device:expr) => {{
        let d = $device;
        $query
            .bind(&d.device_id)
            .bind($crate::columns::user_col(d.user))
            .bind(&d.platform)
            .bind(&d.provider)
            .bind(&d.token)
            .bind(&d.app)
            .bind(&d.language)
            .bind(d.last_seen)
    }};
}
