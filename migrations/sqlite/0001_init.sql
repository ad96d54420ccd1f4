-- Palaver's SQLite schema, version 1: users and credentials, topics, subscriptions, message history and the
-- deletion log. Every key starts with tenant_id: the embedded mode has one tenant, but every port call carries
-- it, so the schema is ready for many. Ids are 64-bit integers (user ids reinterpreted as signed), times are
-- Unix milliseconds, access modes are the JRWPASDO bit sets as integers, and opaque profile data is JSON text.

CREATE TABLE users (
    tenant_id    INTEGER NOT NULL,
    id           INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended')),
    auth_version INTEGER NOT NULL DEFAULT 0,
    defacs_auth  INTEGER NOT NULL,
    defacs_anon  INTEGER NOT NULL,
    public       TEXT    NULL,
    trusted      TEXT    NULL,
    tags         TEXT    NOT NULL DEFAULT '[]',
    last_seen    INTEGER NULL,
    user_agent   TEXT    NULL,
    PRIMARY KEY (tenant_id, id)
);

-- One row per (user, tag), so tag search is an index lookup rather than a scan of JSON.
CREATE TABLE user_tags (
    tenant_id INTEGER NOT NULL,
    user_id   INTEGER NOT NULL,
    tag       TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, tag, user_id)
);
CREATE INDEX user_tags_by_user ON user_tags (tenant_id, user_id);

-- The basic-scheme credential: at most one per user, logins stored lower-cased and unique per tenant.
CREATE TABLE auth (
    tenant_id   INTEGER NOT NULL,
    login       TEXT    NOT NULL,
    user_id     INTEGER NOT NULL,
    secret_hash TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, login),
    UNIQUE (tenant_id, user_id)
);

CREATE TABLE topics (
    tenant_id   INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    touched_at  INTEGER NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended')),
    owner       INTEGER NULL,
    defacs_auth INTEGER NOT NULL,
    defacs_anon INTEGER NOT NULL,
    public      TEXT    NULL,
    trusted     TEXT    NULL,
    tags        TEXT    NOT NULL DEFAULT '[]',
    seq         INTEGER NOT NULL DEFAULT 0,
    del_id      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, name)
);

CREATE TABLE topic_tags (
    tenant_id INTEGER NOT NULL,
    topic     TEXT    NOT NULL,
    tag       TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, tag, topic)
);
CREATE INDEX topic_tags_by_topic ON topic_tags (tenant_id, topic);

-- A soft-deleted subscription keeps its row (deleted_at set) so that an upsert can bring it back.
CREATE TABLE subscriptions (
    tenant_id  INTEGER NOT NULL,
    topic      TEXT    NOT NULL,
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER NULL,
    want       INTEGER NOT NULL,
    given      INTEGER NOT NULL,
    read_seq   INTEGER NOT NULL DEFAULT 0,
    recv_seq   INTEGER NOT NULL DEFAULT 0,
    del_id     INTEGER NOT NULL DEFAULT 0,
    private    TEXT    NULL,
    UNIQUE (tenant_id, topic, user_id)
);
CREATE INDEX subscriptions_by_user ON subscriptions (tenant_id, user_id, topic);

-- Group history. A hard-deleted message keeps its row with deleted_at set and no content, so its seq and its
-- idempotency key stay taken. audit_status is the moderation state: anything but 'pass' is shown to the sender
-- only. risk_flags is a JSON array of the reasons moderation flagged the message (NULL when none), and has_risk
-- is 1 exactly when it is not empty, so flagged messages can be found without parsing JSON. The audit index
-- serves the moderation queue: a tenant's held messages, oldest first.
CREATE TABLE im_group_messages (
    id            INTEGER PRIMARY KEY,
    tenant_id     INTEGER NOT NULL,
    topic         TEXT    NOT NULL,
    seqid         INTEGER NOT NULL,
    from_user     INTEGER NOT NULL,
    client_msg_id TEXT    NULL,
    content       TEXT    NULL,
    head          TEXT    NULL,
    status        TEXT    NOT NULL DEFAULT 'normal',
    audit_status  TEXT    NOT NULL DEFAULT 'pass' CHECK (audit_status IN ('pass', 'pending', 'reject')),
    has_risk      INTEGER NOT NULL DEFAULT 0,
    risk_flags    TEXT    NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    deleted_at    INTEGER NULL,
    UNIQUE (tenant_id, topic, seqid),
    UNIQUE (tenant_id, topic, from_user, client_msg_id)
);
CREATE INDEX im_group_messages_by_audit ON im_group_messages (tenant_id, audit_status, created_at);

-- P2P history, with the same shape as the group table.
CREATE TABLE im_messages (
    id            INTEGER PRIMARY KEY,
    tenant_id     INTEGER NOT NULL,
    topic         TEXT    NOT NULL,
    seqid         INTEGER NOT NULL,
    from_user     INTEGER NOT NULL,
    client_msg_id TEXT    NULL,
    content       TEXT    NULL,
    head          TEXT    NULL,
    status        TEXT    NOT NULL DEFAULT 'normal',
    audit_status  TEXT    NOT NULL DEFAULT 'pass' CHECK (audit_status IN ('pass', 'pending', 'reject')),
    has_risk      INTEGER NOT NULL DEFAULT 0,
    risk_flags    TEXT    NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    deleted_at    INTEGER NULL,
    UNIQUE (tenant_id, topic, seqid),
    UNIQUE (tenant_id, topic, from_user, client_msg_id)
);
CREATE INDEX im_messages_by_audit ON im_messages (tenant_id, audit_status, created_at);

-- One row per deleted range [low, hi) of one deletion transaction. deleted_for is 0 for a deletion for
-- everyone, else the id of the only user who no longer sees the range.
CREATE TABLE dellog (
    id          INTEGER PRIMARY KEY,
    tenant_id   INTEGER NOT NULL,
    topic       TEXT    NOT NULL,
    del_id      INTEGER NOT NULL,
    deleted_for INTEGER NOT NULL DEFAULT 0,
    low         INTEGER NOT NULL,
    hi          INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX dellog_by_reader ON dellog (tenant_id, topic, deleted_for, low);

-- Appending a message is one INSERT: these triggers refuse a message for a topic that does not exist and raise
-- the topic's seq and touched time in the same statement, so an append costs one round trip, not four.
CREATE TRIGGER im_group_messages_need_topic BEFORE INSERT ON im_group_messages
WHEN NOT EXISTS (SELECT 1 FROM topics WHERE tenant_id = NEW.tenant_id AND name = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'palaver: topic not found');
END;

CREATE TRIGGER im_group_messages_raise_topic AFTER INSERT ON im_group_messages
BEGIN
    UPDATE topics SET seq = MAX(seq, NEW.seqid), touched_at = MAX(touched_at, NEW.created_at)
    WHERE tenant_id = NEW.tenant_id AND name = NEW.topic;
END;

CREATE TRIGGER im_messages_need_topic BEFORE INSERT ON im_messages
WHEN NOT EXISTS (SELECT 1 FROM topics WHERE tenant_id = NEW.tenant_id AND name = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'palaver: topic not found');
END;

CREATE TRIGGER im_messages_raise_topic AFTER INSERT ON im_messages
BEGIN
    UPDATE topics SET seq = MAX(seq, NEW.seqid), touched_at = MAX(touched_at, NEW.created_at)
    WHERE tenant_id = NEW.tenant_id AND name = NEW.topic;
END;
