-- Palaver's tenant database, version 14: external identities. An app backend names an account by its own id
-- (`external_id`, the `sub` of the tokens it signs, or the id it gave when it created the account through the
-- admin API): at most one per account, unique in the tenant. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS user_external_ids (
  external_id  VARCHAR(255)  NOT NULL,
  user_id      BIGINT        NOT NULL,
  created_at   BIGINT        NOT NULL,
  PRIMARY KEY (external_id),
  UNIQUE KEY uk_user_external_ids_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
