-- Palaver's SQLite schema, version 12: tenant settings. Same conventions as 0001. One row per tenant and
-- document name (`push` first: the tenant's own push providers), its value a JSON document the admin API
-- checked; `updated_at` in Unix milliseconds. The columns match the MariaDB table of the tenant migration 0012.
CREATE TABLE im_settings (
    tenant_id  INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
