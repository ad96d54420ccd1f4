-- Palaver's SQLite schema, version 5: the outbox. Records owed to the task queue (admin results, audit, summaries,
-- push and file tasks) are written here in the same transaction as the state change that owes them, and a relay
-- produces them to the queue in id order and then deletes them, so the queue being down delays them and loses
-- none. `topic` is the queue topic's role name (`admin_result`, `audit`, …), not a broker topic name; `headers`
-- is a JSON array of [name, value] pairs.

CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL,
    topic      TEXT    NOT NULL,
    msg_key    TEXT    NOT NULL,
    headers    TEXT    NOT NULL DEFAULT '[]',
    payload    BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX outbox_by_tenant ON outbox (tenant_id, id);
