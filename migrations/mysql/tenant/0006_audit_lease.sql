-- Palaver's tenant database, version 6: the audit log's event id, and the outbox relay's lease.
--
-- The audit consumer stores each event once: `event_id` is unique, and a redelivered event's insert is ignored.
-- `outbox_lease` has one row: which node's relay may produce this tenant's outbox entries, and until when.
--
-- Repeatable like every migration here.

ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS event_id VARCHAR(64) NULL AFTER id;
CREATE UNIQUE INDEX IF NOT EXISTS uk_audit_log_event ON audit_log (event_id);

CREATE TABLE IF NOT EXISTS outbox_lease (
  id         TINYINT      NOT NULL,
  owner      VARCHAR(128) NOT NULL,
  expires_at BIGINT       NOT NULL COMMENT 'Unix ms',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
