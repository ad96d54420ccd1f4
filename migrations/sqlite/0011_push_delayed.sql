-- Palaver's SQLite schema, version 11: pushes a filter delayed. Same conventions as 0001. One row per delayed
-- push (the task, its recipient and the message as the filter left it, as JSON), kept until `due_at`; a claimer
-- holds a row until `claimed_until` while it sends, then deletes it, so a node that stops loses none and two never
-- send one at once. The columns match the MariaDB table of the tenant migration 0011.
CREATE TABLE im_push_delayed (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id     INTEGER NOT NULL,
    due_at        INTEGER NOT NULL,
    claimed_by    TEXT    NOT NULL DEFAULT '',
    claimed_until INTEGER NOT NULL DEFAULT 0,
    push          TEXT    NOT NULL
);
CREATE INDEX im_push_delayed_due ON im_push_delayed (tenant_id, due_at);
