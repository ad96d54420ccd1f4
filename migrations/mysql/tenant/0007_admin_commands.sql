-- Palaver's tenant database, version 7: the admin command ledger and abuse reports.
--
-- `admin_commands` holds one row per command id: claimed (`running`) before its effect and made final
-- (`succeeded`, `failed`, `rejected`) with its result, in the same transaction as the result's outbox row, so
-- a command has exactly one effect however often it is delivered and on however many nodes.
--
-- Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS admin_commands (
  command_id VARCHAR(128) NOT NULL,
  type       VARCHAR(64)  NOT NULL,
  status     VARCHAR(16)  NOT NULL,
  result     JSON         NULL,
  attempts   INT          NOT NULL DEFAULT 0,
  node       VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(3)  NOT NULL,
  updated_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (command_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS abuse_reports (
  id           BIGINT        NOT NULL AUTO_INCREMENT,
  reporter_id  BIGINT        NOT NULL,
  target_type  VARCHAR(16)   NOT NULL,
  target       VARCHAR(160)  NOT NULL,
  reason       VARCHAR(512)  NOT NULL,
  note         VARCHAR(2048) NULL,
  status       VARCHAR(16)   NOT NULL DEFAULT 'open',
  resolution   VARCHAR(64)   NULL,
  resolve_note VARCHAR(2048) NULL,
  resolved_by  VARCHAR(128)  NULL,
  resolved_at  DATETIME(3)   NULL,
  created_at   DATETIME(3)   NOT NULL,
  PRIMARY KEY (id),
  KEY abuse_reports_by_reporter (reporter_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
