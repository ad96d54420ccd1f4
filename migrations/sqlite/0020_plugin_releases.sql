-- Palaver's SQLite schema, version 20: plugin releases, their rollouts and what each node runs, as the MariaDB
-- control migration 0003. Same conventions as 0001.
--
-- `plugin_releases` holds one row per uploaded (name, version): the component's SHA-256 (lower-case hex), the
-- manifest's TOML text and the component's bytes. A released version is immutable: rows are never updated or
-- deleted, and a second upload of the same version is compared by its SHA-256 only.
--
-- `plugin_rollouts` holds one row per plugin: the live version (NULL hands the plugin back to each node's plugin
-- directory), the canary's version and tenants (both NULL without a canary; the tenants as a JSON array of ids)
-- and the revision it was stored under. A put takes `MAX(revision) + 1` and replaces the row in one
-- `BEGIN IMMEDIATE` transaction; rows are never deleted, so the highest revision stays in the table and none is
-- handed out twice. The unique index on `revision` serves both that `MAX` and the catch-up reads
-- (`revision > ? ORDER BY revision`).
--
-- `plugin_node_reports` holds what each node last said it runs of each plugin, replaced by its next report.
CREATE TABLE plugin_releases (
    name        TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    sha256      TEXT    NOT NULL,
    manifest    TEXT    NOT NULL,
    component   BLOB    NOT NULL,
    signed_by   TEXT    NULL,
    uploaded_at INTEGER NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE plugin_rollouts (
    plugin         TEXT    NOT NULL PRIMARY KEY,
    live           TEXT    NULL,
    canary_version TEXT    NULL,
    canary_tenants TEXT    NULL,
    revision       INTEGER NOT NULL UNIQUE,
    updated_at     INTEGER NOT NULL,
    CHECK ((canary_version IS NULL) = (canary_tenants IS NULL))
);

CREATE TABLE plugin_node_reports (
    node     TEXT    NOT NULL,
    plugin   TEXT    NOT NULL,
    live     TEXT    NULL,
    canary   TEXT    NULL,
    error    TEXT    NULL,
    revision INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (node, plugin)
);
