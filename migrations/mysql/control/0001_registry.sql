-- Palaver's control database, version 1: the tenant registry and the API keys that resolve to tenants.
--
-- Every statement is IF NOT EXISTS, so a half-applied run (MariaDB commits each DDL statement on its own) can be
-- finished by running this file again; see ../README.md. Times are Unix milliseconds, the form the domain uses.
-- Codes, keys and database names compare byte for byte (utf8mb4_bin): `Acme` and `acme` are different keys.

CREATE TABLE IF NOT EXISTS tenants (
  id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  code           VARCHAR(32)     NOT NULL COMMENT 'short unique code, [a-z0-9_-]{1,32}; part of the database name',
  name           VARCHAR(255)    NOT NULL,
  status         VARCHAR(16)     NOT NULL DEFAULT 'active' COMMENT 'active/disabled',
  database_name  VARCHAR(64)     NOT NULL COMMENT 'the tenant''s own database on this server',
  config         JSON            NOT NULL DEFAULT '{}' COMMENT 'tenant-level settings: policies, plugin settings',
  schema_version BIGINT          NULL COMMENT 'highest tenant migration applied by the last migrate run',
  migrate_error  TEXT            NULL COMMENT 'why the last migrate run failed for this tenant, NULL if it did not',
  created_at     BIGINT          NOT NULL,
  updated_at     BIGINT          NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_tenants_code (code),
  UNIQUE KEY uk_tenants_database (database_name),
  CONSTRAINT ck_tenants_status CHECK (status IN ('active', 'disabled'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A key resolves to exactly one tenant, so the key itself is the primary key.
CREATE TABLE IF NOT EXISTS api_keys (
  api_key    VARCHAR(255)    NOT NULL,
  tenant_id  BIGINT UNSIGNED NOT NULL,
  created_at BIGINT          NOT NULL,
  PRIMARY KEY (api_key),
  KEY idx_api_keys_tenant (tenant_id),
  CONSTRAINT fk_api_keys_tenant FOREIGN KEY (tenant_id) REFERENCES tenants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
