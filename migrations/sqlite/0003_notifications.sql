-- Palaver's SQLite schema, version 3: the system notifications each user pages through and marks read. Same
-- conventions as 0001 and 0002: every key starts with tenant_id, user ids are 64-bit integers reinterpreted as
-- signed, times are Unix milliseconds, and the content is JSON text. The columns match the MariaDB table
-- im_system_notifications of the tenant migration 0002.

-- Notice ids come from one rowid sequence for all tenants: every lookup also matches tenant_id and user_id, and
-- AUTOINCREMENT never hands out an id twice, so an id keeps meaning one notice and cursors stay stable.
CREATE TABLE im_system_notifications (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    INTEGER NOT NULL,
    user_id      INTEGER NOT NULL,
    kind         TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    source_topic TEXT    NULL,
    source_seq   INTEGER NULL,
    read_at      INTEGER NULL,
    expires_at   INTEGER NULL,
    created_at   INTEGER NOT NULL
);
-- A user's notices newest first, for the history and its cursor.
CREATE INDEX im_system_notifications_user ON im_system_notifications (tenant_id, user_id, id);
-- A user's unread notices alone, for the unread count, the unread-only list and marking all read.
CREATE INDEX im_system_notifications_unread ON im_system_notifications (tenant_id, user_id, id)
    WHERE read_at IS NULL;
-- Notices that expire, for a sweep that deletes the expired ones.
CREATE INDEX im_system_notifications_expires ON im_system_notifications (expires_at)
    WHERE expires_at IS NOT NULL;
