-- Palaver's control database, version 2: the tenants' plugin choices (enabled or not, settings, failure policies
-- per hook), cluster-wide so that every node applies the same ones and a restart keeps them.
--
-- `plugin_choices` holds one row per (tenant, plugin): the whole choice as JSON and the version it was stored
-- under; nodes catch up with `version > ? ORDER BY version`, on the unique key. `plugin_choice_version` is a
-- one-row sequence (id 1): a put bumps it with `UPDATE … SET v = LAST_INSERT_ID(v + 1)` and keeps the row locked
-- until it commits, so puts take their versions and commit in version order. Repeatable like every migration
-- here: the seed row is inserted only if missing.

CREATE TABLE IF NOT EXISTS plugin_choices (
  tenant_id  BIGINT UNSIGNED NOT NULL,
  plugin     VARCHAR(64)     NOT NULL,
  choice     JSON            NOT NULL COMMENT '{"enabled": …, "settings": …, "failure": {…}} as the admin API shows it',
  version    BIGINT          NOT NULL COMMENT 'from plugin_choice_version; above every version stored before',
  PRIMARY KEY (tenant_id, plugin),
  UNIQUE KEY uk_plugin_choices_version (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS plugin_choice_version (
  id  TINYINT NOT NULL,
  v   BIGINT  NOT NULL COMMENT 'the highest version handed out',
  PRIMARY KEY (id),
  CONSTRAINT ck_plugin_choice_version_id CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO plugin_choice_version (id, v) VALUES (1, 0);
