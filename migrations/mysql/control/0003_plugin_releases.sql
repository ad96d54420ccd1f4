-- Palaver's control database, version 3: plugin releases and their rollout, cluster-wide, so that one upload
-- reaches every node and a rollback (a rollout naming an older release) survives restarts and directory rescans.
--
-- `plugin_releases` holds one row per uploaded (name, version): the component's SHA-256, the manifest as uploaded
-- and the component's bytes (MEDIUMBLOB: up to 16 MiB, which `max_allowed_packet` must also let through). A
-- released version is immutable: rows are never updated or deleted.
--
-- `plugin_rollouts` holds one row per plugin: the live version (NULL hands the plugin back to each node's plugin
-- directory), the canary's version and tenants (both NULL without a canary) and the revision it was stored under;
-- nodes catch up with `revision > ? ORDER BY revision`, on the unique key. `plugin_rollout_revision` is a one-row
-- sequence (id 1) like `plugin_choice_version`: a put bumps it with `UPDATE … SET v = LAST_INSERT_ID(v + 1)` and
-- keeps the row locked until it commits, so puts take their revisions and commit in revision order.
--
-- `plugin_node_reports` holds what each node last said it runs of each plugin, replaced by its next report.
-- Repeatable like every migration here: the seed row is inserted only if missing.

CREATE TABLE IF NOT EXISTS plugin_releases (
  name         VARCHAR(64)  NOT NULL,
  version      VARCHAR(128) NOT NULL,
  sha256       VARCHAR(64)  NOT NULL COMMENT 'the component''s SHA-256, lower-case hex',
  manifest     MEDIUMTEXT   NOT NULL COMMENT 'the manifest''s TOML text, as uploaded',
  component    MEDIUMBLOB   NOT NULL,
  signed_by    VARCHAR(255)     NULL COMMENT 'the trusted key whose signature was checked at upload',
  uploaded_at  BIGINT       NOT NULL COMMENT 'Unix milliseconds',
  PRIMARY KEY (name, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS plugin_rollouts (
  plugin          VARCHAR(64)  NOT NULL,
  live            VARCHAR(128)     NULL COMMENT 'NULL: each node''s plugin directory decides',
  canary_version  VARCHAR(128)     NULL,
  canary_tenants  JSON             NULL COMMENT 'the canary''s tenant ids, ascending; NULL without a canary',
  revision        BIGINT       NOT NULL COMMENT 'from plugin_rollout_revision; above every revision stored before',
  updated_at      BIGINT       NOT NULL COMMENT 'Unix milliseconds',
  PRIMARY KEY (plugin),
  UNIQUE KEY uk_plugin_rollouts_revision (revision),
  CONSTRAINT ck_plugin_rollouts_canary CHECK ((canary_version IS NULL) = (canary_tenants IS NULL))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS plugin_rollout_revision (
  id  TINYINT NOT NULL,
  v   BIGINT  NOT NULL COMMENT 'the highest revision handed out',
  PRIMARY KEY (id),
  CONSTRAINT ck_plugin_rollout_revision_id CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO plugin_rollout_revision (id, v) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS plugin_node_reports (
  node      VARCHAR(255) NOT NULL,
  plugin    VARCHAR(64)  NOT NULL,
  live      VARCHAR(128)     NULL,
  canary    VARCHAR(128)     NULL,
  error     TEXT             NULL COMMENT 'why the node does not run what the rollout names, if it does not',
  revision  BIGINT       NOT NULL COMMENT 'the rollout revision the node has applied',
  at        BIGINT       NOT NULL COMMENT 'Unix milliseconds',
  PRIMARY KEY (node, plugin)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
