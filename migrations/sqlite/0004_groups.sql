-- Palaver's SQLite schema, version 4: group governance state (business roles, mutes, per-group settings, join
-- requests, announcements and their read marks). Same conventions as 0001 to 0003: every key starts with
-- tenant_id, user ids are 64-bit integers reinterpreted as signed, times are Unix milliseconds, and content is
-- JSON text. The columns follow the MariaDB tables of the tenant migrations 0002 and 0004.

-- Business roles above a plain member; a member without a row is a plain member.
CREATE TABLE group_member_roles (
    tenant_id  INTEGER NOT NULL,
    topic      TEXT    NOT NULL,
    user_id    INTEGER NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('owner', 'admin')),
    granted_by INTEGER NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, topic, user_id)
);
-- At most one owner per group: the store checks under the one writer, and this index makes a second owner
-- impossible even for a writer that skipped the check.
CREATE UNIQUE INDEX group_member_roles_owner ON group_member_roles (tenant_id, topic) WHERE role = 'owner';

-- A mute of one member, or of everyone when user_id is 0 (never a valid user id). muted_until NULL means until
-- lifted.
CREATE TABLE group_mutes (
    tenant_id   INTEGER NOT NULL,
    topic       TEXT    NOT NULL,
    user_id     INTEGER NOT NULL,
    muted_by    INTEGER NULL,
    reason      TEXT    NULL,
    muted_until INTEGER NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, topic, user_id)
);

-- A group without a row has the default settings.
CREATE TABLE group_settings (
    tenant_id      INTEGER NOT NULL,
    topic          TEXT    NOT NULL,
    join_policy    TEXT    NOT NULL CHECK (join_policy IN ('open', 'approval', 'closed')),
    members_invite INTEGER NOT NULL DEFAULT 0,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, topic)
);

-- Request ids come from one rowid sequence for all tenants, like friend request ids: every lookup also matches
-- tenant_id and topic, and AUTOINCREMENT never hands out an id twice, so cursors stay stable.
CREATE TABLE group_join_requests (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL,
    topic      TEXT    NOT NULL,
    user_id    INTEGER NOT NULL,
    inviter    INTEGER NULL,
    message    TEXT    NULL,
    status     TEXT    NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'accepted', 'rejected', 'cancelled', 'expired')),
    handled_by INTEGER NULL,
    handled_at INTEGER NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- At most one pending request per user and group, backing the store's own check in the schema.
CREATE UNIQUE INDEX group_join_requests_pending ON group_join_requests (tenant_id, topic, user_id)
    WHERE status = 'pending';
CREATE INDEX group_join_requests_topic ON group_join_requests (tenant_id, topic, id);
CREATE INDEX group_join_requests_user ON group_join_requests (tenant_id, user_id);

-- Announcements keep their history: an edit bumps version, a removal sets deleted_at.
CREATE TABLE group_announcements (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL,
    topic      TEXT    NOT NULL,
    author     INTEGER NOT NULL,
    title      TEXT    NULL,
    content    TEXT    NOT NULL,
    pinned     INTEGER NOT NULL DEFAULT 0,
    version    INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER NULL
);
-- A group's live announcements alone, for the listing.
CREATE INDEX group_announcements_live ON group_announcements (tenant_id, topic, pinned, id)
    WHERE deleted_at IS NULL;

-- When each member first read an announcement; the first time is kept.
CREATE TABLE group_announcement_reads (
    tenant_id       INTEGER NOT NULL,
    announcement_id INTEGER NOT NULL,
    user_id         INTEGER NOT NULL,
    read_at         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, announcement_id, user_id)
);
