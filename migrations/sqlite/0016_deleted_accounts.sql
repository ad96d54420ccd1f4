-- Palaver's SQLite schema, version 16: deleted accounts, as the MariaDB tenant migration 0015. An account its
-- owner or an admin deleted keeps its row in state 'deleted' (so the messages it sent still name a sender) and
-- never logs in again. SQLite cannot change a CHECK in place, so the table is rebuilt with the same columns.
CREATE TABLE users_v16 (
    tenant_id    INTEGER NOT NULL,
    id           INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended', 'deleted')),
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
INSERT INTO users_v16 (tenant_id, id, created_at, updated_at, state, auth_version, defacs_auth, defacs_anon, public,
                       trusted, tags, last_seen, user_agent)
    SELECT tenant_id, id, created_at, updated_at, state, auth_version, defacs_auth, defacs_anon, public, trusted,
           tags, last_seen, user_agent
    FROM users;
DROP TABLE users;
ALTER TABLE users_v16 RENAME TO users;
