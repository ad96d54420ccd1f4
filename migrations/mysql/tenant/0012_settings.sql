-- Palaver's tenant database, version 12: tenant settings.
--
-- One row per document name (`push` first: the tenant's own push providers), its value a JSON document the
-- admin API checked; `updated_at` in UTC. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS im_settings (
  name       VARCHAR(64)  NOT NULL,
  value      JSON         NOT NULL,
  updated_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
