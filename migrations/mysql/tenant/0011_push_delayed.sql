-- Palaver's tenant database, version 11: pushes a filter delayed.
--
-- One row per delayed push (the task, its recipient and the message as the filter left it, as JSON), kept until
-- `due_at` (Unix milliseconds); a claimer holds a row until `claimed_until` while it sends, then deletes it, so a
-- node that stops loses none and two never send one at once. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS im_push_delayed (
  id            BIGINT       NOT NULL AUTO_INCREMENT,
  due_at        BIGINT       NOT NULL,
  claimed_by    VARCHAR(128) NOT NULL DEFAULT '',
  claimed_until BIGINT       NOT NULL DEFAULT 0,
  push          JSON         NOT NULL,
  PRIMARY KEY (id),
  KEY im_push_delayed_due (due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
