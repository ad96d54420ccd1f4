-- Palaver's SQLite schema, version 6: the embedded task queue, the outbox relay's lease, and the audit log.
--
-- `queue_records` is the embedded queue: one partition per topic (the role name, `audit`, `admin_command`, …); a
-- record's offset is its `id`, which AUTOINCREMENT never reuses, so offsets only grow (with gaps between a topic's
-- records, as Kafka's may have) even after old records are pruned. `queue_offsets` holds each consumer group's committed offset per topic (the
-- offset of the next record the group has not committed), so a restarted consumer resumes after its last commit
-- and an uncommitted record is delivered again.
CREATE TABLE queue_records (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    topic      TEXT    NOT NULL,
    msg_key    TEXT    NOT NULL,
    headers    TEXT    NOT NULL DEFAULT '[]',
    payload    BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX queue_records_by_topic ON queue_records (topic, id);
CREATE INDEX queue_records_by_age ON queue_records (created_at);

CREATE TABLE queue_offsets (
    group_id  TEXT    NOT NULL,
    topic     TEXT    NOT NULL,
    next      INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic)
) WITHOUT ROWID;

-- One row per tenant: which node's relay may produce the tenant's outbox entries, and until when.
CREATE TABLE outbox_lease (
    tenant_id  INTEGER PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Who did what to which record, written by the audit consumer; at most one row per event id. Rows are only
-- ever inserted.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id   INTEGER NOT NULL,
    event_id    TEXT    NOT NULL,
    actor_kind  TEXT    NOT NULL,
    actor_id    INTEGER,
    action      TEXT    NOT NULL,
    target_kind TEXT    NOT NULL,
    target_id   TEXT    NOT NULL,
    topic       TEXT,
    seqid       INTEGER,
    detail      TEXT,
    client_ip   TEXT,
    created_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX audit_log_event ON audit_log (tenant_id, event_id);
CREATE INDEX audit_log_created ON audit_log (tenant_id, created_at);
