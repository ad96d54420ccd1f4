-- Palaver's tenant database, version 8: push devices.
--
-- One row per registered push token (`{hi dev platf}`); the device id is a hash of the token, so a token belongs
-- to at most one user of the tenant. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS im_devices (
  device_id  VARCHAR(64)   NOT NULL,
  user_id    BIGINT        NOT NULL,
  platform   VARCHAR(32)   NOT NULL DEFAULT '',
  provider   VARCHAR(16)   NOT NULL,
  token      VARCHAR(4096) NOT NULL,
  app        VARCHAR(255)  NOT NULL DEFAULT '',
  language   VARCHAR(32)   NOT NULL DEFAULT '',
  last_seen  DATETIME(3)   NOT NULL,
  PRIMARY KEY (device_id),
  KEY im_devices_user (user_id, device_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
