-- Palaver's tenant database, version 16: the accounts' credentials (Tinode's `cred`: an email address or a phone
-- number an account proves it owns with a code).
--
-- One row per account and (method, value), `done` once confirmed; times are BIGINT Unix milliseconds like the
-- other tables of the user port. `claim` is 0 once confirmed and the account's own id while not: the unique key
-- on (method, value, claim) lets any number of accounts hold an unconfirmed claim but only one of them confirm
-- it, decided by the key in the confirming statement itself. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS credentials (
  user_id     BIGINT        NOT NULL,
  method      VARCHAR(16)   NOT NULL COMMENT 'email/tel',
  value       VARCHAR(255)  NOT NULL COMMENT 'normalised: a lower-cased address, + and digits',
  done        TINYINT(1)    NOT NULL DEFAULT 0,
  claim       BIGINT        NOT NULL COMMENT '0 once confirmed, else user_id',
  created_at  BIGINT        NOT NULL,
  updated_at  BIGINT        NOT NULL,
  PRIMARY KEY (user_id, method, value),
  UNIQUE KEY uk_credentials_claim (method, value, claim)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
