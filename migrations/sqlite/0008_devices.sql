-- Palaver's SQLite schema, version 8: push devices. Same conventions as 0001: every key starts with tenant_id,
-- user ids are 64-bit integers reinterpreted as signed, times are Unix milliseconds. The columns match the
-- MariaDB table of the tenant migration 0008.

-- One row per registered push token (`{hi dev platf}`); the device id is a hash of the token, so a token belongs
-- to at most one user of the tenant.
CREATE TABLE im_devices (
    tenant_id  INTEGER NOT NULL,
    device_id  TEXT    NOT NULL,
    user_id    INTEGER NOT NULL,
    platform   TEXT    NOT NULL DEFAULT '',
    provider   TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    app        TEXT    NOT NULL DEFAULT '',
    language   TEXT    NOT NULL DEFAULT '',
    last_seen  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, device_id)
);

CREATE INDEX im_devices_user ON im_devices (tenant_id, user_id, device_id);
