-- Palaver's tenant database, version 17: the plugins' key-value store (the `kv` import), one scope per plugin
-- (the database is the tenant).
--
-- `plugin_kv` holds one row per (plugin, key): the key's bytes (1 to 256), the value's (at most 64 KiB, arbitrary
-- bytes) and its expiry in BIGINT Unix milliseconds, NULL for a key kept for good. A row whose `expires_at` is not
-- after now is dead: reads skip it and the scope's next commit deletes it. Usage counts LENGTH(k) + LENGTH(v),
-- bytes, as the port does.
--
-- `plugin_kv_scopes` holds one row per plugin that ever committed, only to be locked: a commit makes sure its row
-- exists and takes it FOR UPDATE before it reads the scope, so commits of one scope from any node take turns and
-- its quota holds. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS plugin_kv (
  plugin      VARCHAR(64)     NOT NULL,
  k           VARBINARY(256)  NOT NULL,
  v           MEDIUMBLOB      NOT NULL,
  expires_at  BIGINT          NULL COMMENT 'Unix ms; NULL: for good',
  PRIMARY KEY (plugin, k)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS plugin_kv_scopes (
  plugin      VARCHAR(64)     NOT NULL,
  PRIMARY KEY (plugin)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
