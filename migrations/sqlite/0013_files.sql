-- Palaver's SQLite schema, version 13: uploaded files. Same conventions as 0001. `im_files` holds one record per
-- upload (the bytes live in the file store under `{tenant}/{id}`); `status` is pending, clean or blocked;
-- `public` marks an avatar. `im_group_files` registers each message that references a file (`source_topic`,
-- `source_seq`), in groups and P2P topics alike: a file is readable by the readers of a topic that references
-- it, and one nothing references is collected after a grace period. The columns match the MariaDB tables of
-- the tenant migration 0013.
CREATE TABLE im_files (
    tenant_id   INTEGER NOT NULL,
    id          TEXT    NOT NULL,
    uploader_id INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    mime        TEXT    NOT NULL,
    name        TEXT    NOT NULL DEFAULT '',
    sha256      TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    public      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX im_files_uploader ON im_files (tenant_id, uploader_id, created_at);
CREATE INDEX im_files_created ON im_files (tenant_id, created_at);

CREATE TABLE im_group_files (
    tenant_id    INTEGER NOT NULL,
    file_id      TEXT    NOT NULL,
    source_topic TEXT    NOT NULL,
    source_seq   INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, file_id, source_topic, source_seq)
);
