-- Palaver's SQLite schema, version 19: the tenants' plugin choices (enabled or not, settings, failure policies),
-- as the MariaDB control migration 0002. Same conventions as 0001. One row per (tenant, plugin): the whole choice
-- as JSON text and the version it was stored under. A put takes `MAX(version) + 1` and replaces the row in one
-- `BEGIN IMMEDIATE` transaction; rows are never deleted, so the highest version stays in the table and none is
-- handed out twice. The unique index on `version` serves both that `MAX` and the catch-up reads
-- (`version > ? ORDER BY version`).
CREATE TABLE plugin_choices (
    tenant_id INTEGER NOT NULL,
    plugin    TEXT    NOT NULL,
    choice    TEXT    NOT NULL,
    version   INTEGER NOT NULL UNIQUE,
    PRIMARY KEY (tenant_id, plugin)
);
