-- Palaver's SQLite schema, version 18: the plugins' key-value store (the `kv` import), as the MariaDB tenant
-- migration 0017. Same conventions as 0001. One row per (tenant, plugin, key); `value` holds arbitrary bytes;
-- `expires_at` is Unix milliseconds, NULL for a key kept for good. A row whose `expires_at` is not after now is
-- dead: reads skip it and the scope's next commit deletes it. Usage counts bytes as the port does: the key's
-- UTF-8 bytes (`length(CAST(key AS BLOB))`) plus the value's.
CREATE TABLE plugin_kv (
    tenant_id  INTEGER NOT NULL,
    plugin     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      BLOB    NOT NULL,
    expires_at INTEGER,
    PRIMARY KEY (tenant_id, plugin, key)
);
