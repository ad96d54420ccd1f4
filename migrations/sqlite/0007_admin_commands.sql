-- Palaver's SQLite schema, version 7: the admin command ledger and abuse reports. Same conventions as 0001:
-- every key starts with tenant_id, user ids are 64-bit integers reinterpreted as signed, times are Unix
-- milliseconds, JSON is text. The columns match the MariaDB tables of the tenant migration 0007.

-- One row per admin command id: claimed (`running`) before its effect, final (`succeeded`, `failed`,
-- `rejected`) with its result afterwards, so a command has exactly one effect however often it is delivered.
CREATE TABLE admin_commands (
    tenant_id  INTEGER NOT NULL,
    command_id TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    result     TEXT    NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    node       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, command_id)
);

-- Users' abuse reports. Ids come from one rowid sequence for all tenants; every lookup also matches tenant_id.
CREATE TABLE abuse_reports (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id   INTEGER NOT NULL,
    reporter_id INTEGER NOT NULL,
    target_type TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    note        TEXT    NULL,
    status      TEXT    NOT NULL DEFAULT 'open',
    resolution  TEXT    NULL,
    resolve_note TEXT   NULL,
    resolved_by TEXT    NULL,
    resolved_at INTEGER NULL,
    created_at  INTEGER NOT NULL
);
-- The Admin side's list, newest first, and a reporter's recent reports for the per-user limit.
CREATE INDEX abuse_reports_by_tenant ON abuse_reports (tenant_id, id);
CREATE INDEX abuse_reports_by_reporter ON abuse_reports (tenant_id, reporter_id, created_at);
