-- Palaver's SQLite schema, version 15: external identities. An app backend names an account by its own id
-- (`external_id`, the `sub` of the tokens it signs, or the id it gave when it created the account through the
-- admin API): at most one per account, unique per tenant. The columns match the MariaDB table of the tenant
-- migration 0014.
CREATE TABLE user_external_ids (
    tenant_id   INTEGER NOT NULL,
    external_id TEXT    NOT NULL,
    user_id     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, external_id),
    UNIQUE (tenant_id, user_id)
);
