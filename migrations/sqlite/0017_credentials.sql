-- Palaver's SQLite schema, version 17: the accounts' credentials (Tinode's `cred`: an email address or a phone
-- number an account proves it owns with a code), as the MariaDB tenant migration 0016. Same conventions as 0001.
-- One row per account and (method, value), `done` once confirmed. `claim` is 0 once confirmed and the account's
-- own id while not: the unique (tenant_id, method, value, claim) lets any number of accounts hold an unconfirmed
-- claim but only one of them confirm it, decided by the index in the confirming statement itself.
CREATE TABLE credentials (
    tenant_id  INTEGER NOT NULL,
    user_id    INTEGER NOT NULL,
    method     TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    done       INTEGER NOT NULL DEFAULT 0,
    claim      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, method, value),
    UNIQUE (tenant_id, method, value, claim)
);
