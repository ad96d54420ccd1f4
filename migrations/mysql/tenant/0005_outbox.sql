-- Palaver's tenant database, version 5: the outbox. Records owed to the task queue (admin results, audit,
-- summaries, push and file tasks) are written here in the same transaction as the state change that owes them,
-- and a relay produces them to the queue in id order and then deletes them, so Kafka being down delays them and
-- loses none. `topic` is the queue topic's role name (`admin_result`, `audit`, …), not a Kafka topic name;
-- `headers` is a JSON array of [name, value] pairs.
--
-- Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS outbox (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  topic      VARCHAR(32)  NOT NULL,
  msg_key    VARCHAR(255) NOT NULL,
  headers    JSON         NOT NULL,
  payload    MEDIUMBLOB   NOT NULL,
  created_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
