-- Palaver's tenant database, version 13: uploaded files.
--
-- `im_files` holds one record per upload (the bytes live in the file store under `{tenant}/{id}`); `status` is
-- pending, clean or blocked; `public` marks an avatar. `im_group_files` registers each message that references a
-- file (`source_topic`, `source_seq`), in groups and P2P topics alike: a file is readable by the readers of a
-- topic that references it, and one nothing references is collected after a grace period. Times in UTC.
-- Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS im_files (
  id           VARCHAR(32)   NOT NULL,
  uploader_id  BIGINT        NOT NULL,
  size         BIGINT        NOT NULL,
  mime         VARCHAR(255)  NOT NULL,
  name         VARCHAR(255)  NOT NULL DEFAULT '',
  sha256       CHAR(64)      NOT NULL,
  status       VARCHAR(16)   NOT NULL,
  public       TINYINT(1)    NOT NULL DEFAULT 0,
  created_at   DATETIME(3)   NOT NULL,
  PRIMARY KEY (id),
  KEY im_files_uploader (uploader_id, created_at),
  KEY im_files_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS im_group_files (
  file_id       VARCHAR(32)  NOT NULL,
  source_topic  VARCHAR(64)  NOT NULL,
  source_seq    BIGINT       NOT NULL,
  created_at    DATETIME(3)  NOT NULL,
  PRIMARY KEY (file_id, source_topic, source_seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
