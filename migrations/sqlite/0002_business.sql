-- Palaver's SQLite schema, version 2: the relation tables under the friends feature (friend requests,
-- friendships, blocks). Same conventions as 0001: every key starts with tenant_id, user ids are 64-bit integers
-- reinterpreted as signed, times are Unix milliseconds.

-- A friendship is stored once per direction, so each side keeps its own remark and list placement.
CREATE TABLE friends (
    tenant_id  INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    friend_id  INTEGER NOT NULL,
    remark     TEXT    NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, friend_id)
);

-- Request ids come from one rowid sequence for all tenants: every lookup also matches tenant_id, and
-- AUTOINCREMENT never hands out an id twice, so an id keeps meaning one request and cursors stay stable.
CREATE TABLE friend_requests (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL,
    from_user  INTEGER NOT NULL,
    to_user    INTEGER NOT NULL,
    message    TEXT    NULL,
    status     TEXT    NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'accepted', 'rejected', 'cancelled', 'expired')),
    handled_at INTEGER NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- At most one pending request per ordered pair: the store's own check runs under the one writer, and this
-- index makes a duplicate impossible even for a writer that skipped it.
CREATE UNIQUE INDEX friend_requests_pending_pair ON friend_requests (tenant_id, from_user, to_user)
    WHERE status = 'pending';
CREATE INDEX friend_requests_to ON friend_requests (tenant_id, to_user, id);
CREATE INDEX friend_requests_from ON friend_requests (tenant_id, from_user, id);
CREATE INDEX friend_requests_from_created ON friend_requests (tenant_id, from_user, created_at);

-- user_id blocks blocked_id: blocked_id can neither ask user_id for friendship nor message them.
CREATE TABLE user_blocks (
    tenant_id  INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    blocked_id INTEGER NOT NULL,
    reason     TEXT    NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, blocked_id)
);
