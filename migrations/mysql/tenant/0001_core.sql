-- Palaver's tenant database, version 1: users and credentials, topics, subscriptions, message history and the
-- deletion log. One database per tenant, so no table has a tenant_id column (seed §8).
--
-- Conventions:
-- * Every statement is IF NOT EXISTS (or otherwise repeatable), so a half-applied run can be finished by running
--   the file again; MariaDB commits each DDL statement on its own. See ../README.md.
-- * Ids are BIGINT: user ids are Palaver's 64-bit ids reinterpreted as signed, never truncated.
-- * The tables behind the storage ports (users, auth, topics, subscriptions, dellog) keep times as BIGINT Unix
--   milliseconds, the form the domain uses, so values round-trip exactly and need no time zone. The message tables
--   follow the seed's DATETIME(3) columns, holding UTC.
-- * Identifiers, tags and logins compare byte for byte (utf8mb4_bin): Tinode ids are case-sensitive base64.
-- * Access modes are the JRWPASDO bit sets as integers; opaque profile data is JSON.

CREATE TABLE IF NOT EXISTS users (
  id           BIGINT       NOT NULL,
  created_at   BIGINT       NOT NULL,
  updated_at   BIGINT       NOT NULL,
  state        VARCHAR(16)  NOT NULL DEFAULT 'active' COMMENT 'active/suspended',
  auth_version BIGINT       NOT NULL DEFAULT 0 COMMENT 'bumped by a password change; older tokens are refused',
  defacs_auth  SMALLINT     NOT NULL,
  defacs_anon  SMALLINT     NOT NULL,
  public       JSON         NULL,
  trusted      JSON         NULL,
  tags         JSON         NOT NULL DEFAULT '[]',
  last_seen    BIGINT       NULL,
  user_agent   TEXT         NULL,
  PRIMARY KEY (id),
  CONSTRAINT ck_users_state CHECK (state IN ('active', 'suspended'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (tag, user), so tag search is an index lookup rather than a scan of JSON.
CREATE TABLE IF NOT EXISTS user_tags (
  tag     VARCHAR(255) NOT NULL,
  user_id BIGINT       NOT NULL,
  PRIMARY KEY (tag, user_id),
  KEY idx_user_tags_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The basic-scheme credential: at most one per user, logins stored lower-cased. secret_hash is an argon2id PHC
-- string, or a bcrypt hash imported from Tinode.
CREATE TABLE IF NOT EXISTS auth (
  login       VARCHAR(255) NOT NULL,
  user_id     BIGINT       NOT NULL,
  secret_hash VARCHAR(255) NOT NULL,
  PRIMARY KEY (login),
  UNIQUE KEY uk_auth_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- seq is the highest stored message seq and touched_at the time of the last message: both are raised in the
-- same transaction as the message insert. del_id counts the topic's deletion transactions.
CREATE TABLE IF NOT EXISTS topics (
  name        VARCHAR(64) NOT NULL,
  kind        VARCHAR(8)  NOT NULL COMMENT 'grp/p2p',
  created_at  BIGINT      NOT NULL,
  updated_at  BIGINT      NOT NULL,
  touched_at  BIGINT      NOT NULL,
  state       VARCHAR(16) NOT NULL DEFAULT 'active' COMMENT 'active/suspended',
  owner       BIGINT      NULL,
  defacs_auth SMALLINT    NOT NULL,
  defacs_anon SMALLINT    NOT NULL,
  public      JSON        NULL,
  trusted     JSON        NULL,
  tags        JSON        NOT NULL DEFAULT '[]',
  seq         BIGINT      NOT NULL DEFAULT 0,
  del_id      BIGINT      NOT NULL DEFAULT 0,
  PRIMARY KEY (name),
  KEY idx_topics_kind_state (kind, state),
  CONSTRAINT ck_topics_state CHECK (state IN ('active', 'suspended'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS topic_tags (
  tag   VARCHAR(255) NOT NULL,
  topic VARCHAR(64)  NOT NULL,
  PRIMARY KEY (tag, topic),
  KEY idx_topic_tags_topic (topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A soft-deleted subscription keeps its row (deleted_at set) so that an upsert can bring it back. read_seq and
-- recv_seq only rise, and recv_seq is never below read_seq.
CREATE TABLE IF NOT EXISTS subscriptions (
  topic      VARCHAR(64) NOT NULL,
  user_id    BIGINT      NOT NULL,
  created_at BIGINT      NOT NULL,
  updated_at BIGINT      NOT NULL,
  deleted_at BIGINT      NULL,
  want       SMALLINT    NOT NULL,
  given      SMALLINT    NOT NULL,
  read_seq   BIGINT      NOT NULL DEFAULT 0,
  recv_seq   BIGINT      NOT NULL DEFAULT 0,
  del_id     BIGINT      NOT NULL DEFAULT 0,
  private    JSON        NULL,
  PRIMARY KEY (topic, user_id),
  KEY idx_subscriptions_user (user_id, topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Group history: the seed's table (§6.2), verbatim. group_id is derived from the topic name by the store (see the
-- crate docs of palaver-store-mysql): the 64-bit id a canonical `grp` + 11-character base64url name encodes, else
-- the first 8 bytes of SHA-256 of the name. A hard-deleted message keeps its row (status 'deleted', deleted_at
-- set, content and head NULL) so that its seq and its idempotency key stay taken.
CREATE TABLE IF NOT EXISTS im_group_messages (
  id BIGINT NOT NULL AUTO_INCREMENT,
  topic VARCHAR(64) NOT NULL COMMENT '群 Topic，如 grp_xxx',
  group_id BIGINT NOT NULL COMMENT '业务群 ID，便于分区、治理和统计',
  seqid BIGINT NOT NULL COMMENT '群内消息序号，由 Redis 原子发号',
  from_user BIGINT NOT NULL COMMENT '发送人用户 ID',
  client_msg_id VARCHAR(64) NULL COMMENT '客户端幂等消息 ID',
  msg_type VARCHAR(32) NOT NULL DEFAULT 'text' COMMENT 'text/image/file/audio/video/system 等',
  status VARCHAR(32) NOT NULL DEFAULT 'normal' COMMENT 'normal/recalled/deleted/blocked',
  content JSON NULL COMMENT '消息正文或 Drafty 内容',
  head JSON NULL COMMENT '消息头，包含 @、引用、客户端能力等',
  mentioned_user_ids JSON NULL COMMENT '@ 用户列表，便于提醒和检索',
  mention_all TINYINT(1) NOT NULL DEFAULT 0 COMMENT '是否 @ 全体',
  reply_seqid BIGINT NULL COMMENT '回复的群消息 seq',
  root_seqid BIGINT NULL COMMENT '线程或合并上下文根消息 seq',
  file_count INT NOT NULL DEFAULT 0 COMMENT '附件数量',
  content_size INT NOT NULL DEFAULT 0 COMMENT '正文 JSON 序列化后的字节数',
  has_risk TINYINT(1) NOT NULL DEFAULT 0 COMMENT '是否命中风控或内容安全',
  audit_status VARCHAR(32) NOT NULL DEFAULT 'pass' COMMENT 'pass/pending/reject',
  version INT NOT NULL DEFAULT 1 COMMENT '编辑版本',
  recalled_at DATETIME(3) NULL,
  recalled_by BIGINT NULL,
  deleted_at DATETIME(3) NULL,
  expires_at DATETIME(3) NULL COMMENT '可选保留期，便于过期归档或清理',
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_im_group_messages_group_seq (group_id, seqid),
  UNIQUE KEY uk_im_group_messages_topic_seq (topic, seqid),
  UNIQUE KEY uk_im_group_messages_topic_sender_client_mid (topic, from_user, client_msg_id),
  KEY idx_im_group_messages_group_created (group_id, created_at),
  KEY idx_im_group_messages_group_status_seq (group_id, status, seqid),
  KEY idx_im_group_messages_topic_created (topic, created_at),
  KEY idx_im_group_messages_topic_from_seq (topic, from_user, seqid),
  KEY idx_im_group_messages_audit (audit_status, created_at),
  KEY idx_im_group_messages_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Two changes to the seed's table, kept apart so that the table above stays exactly as the seed wrote it:
-- * topic and client_msg_id compare byte for byte. Under the seed's utf8mb4_unicode_ci, `grpAbc` and `grpABC`
--   (two different Tinode topics) would share uk_im_group_messages_topic_seq, and so would the client ids `a1`
--   and `A1` of one sender.
-- * risk_flags holds why moderation flagged a message (a JSON array; NULL when none). has_risk is 1 exactly when
--   it is not empty, so flagged messages can be found without parsing JSON.
ALTER TABLE im_group_messages
  MODIFY topic VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT '群 Topic，如 grp_xxx',
  MODIFY client_msg_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT '客户端幂等消息 ID',
  ADD COLUMN IF NOT EXISTS risk_flags JSON NULL COMMENT 'moderation reasons, JSON array; NULL when none';

-- P2P history, with the group table's shape (and its two changes above). group_id holds the conversation's id,
-- derived from the `p2p…` name the same way (SHA-256, since the name encodes two user ids).
CREATE TABLE IF NOT EXISTS im_messages (
  id BIGINT NOT NULL AUTO_INCREMENT,
  topic VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL COMMENT 'P2P topic, p2p…',
  group_id BIGINT NOT NULL COMMENT 'conversation id derived from the topic name',
  seqid BIGINT NOT NULL,
  from_user BIGINT NOT NULL,
  client_msg_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  msg_type VARCHAR(32) NOT NULL DEFAULT 'text',
  status VARCHAR(32) NOT NULL DEFAULT 'normal',
  content JSON NULL,
  head JSON NULL,
  mentioned_user_ids JSON NULL,
  mention_all TINYINT(1) NOT NULL DEFAULT 0,
  reply_seqid BIGINT NULL,
  root_seqid BIGINT NULL,
  file_count INT NOT NULL DEFAULT 0,
  content_size INT NOT NULL DEFAULT 0,
  has_risk TINYINT(1) NOT NULL DEFAULT 0,
  audit_status VARCHAR(32) NOT NULL DEFAULT 'pass',
  version INT NOT NULL DEFAULT 1,
  recalled_at DATETIME(3) NULL,
  recalled_by BIGINT NULL,
  deleted_at DATETIME(3) NULL,
  expires_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  risk_flags JSON NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_im_messages_group_seq (group_id, seqid),
  UNIQUE KEY uk_im_messages_topic_seq (topic, seqid),
  UNIQUE KEY uk_im_messages_topic_sender_client_mid (topic, from_user, client_msg_id),
  KEY idx_im_messages_group_created (group_id, created_at),
  KEY idx_im_messages_group_status_seq (group_id, status, seqid),
  KEY idx_im_messages_topic_created (topic, created_at),
  KEY idx_im_messages_topic_from_seq (topic, from_user, seqid),
  KEY idx_im_messages_audit (audit_status, created_at),
  KEY idx_im_messages_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per deleted range [low, hi) of one deletion transaction. deleted_for is 0 for a deletion for everyone,
-- else the id of the only user who no longer sees the range.
CREATE TABLE IF NOT EXISTS dellog (
  id          BIGINT      NOT NULL AUTO_INCREMENT,
  topic       VARCHAR(64) NOT NULL,
  del_id      BIGINT      NOT NULL,
  deleted_for BIGINT      NOT NULL DEFAULT 0,
  low         BIGINT      NOT NULL,
  hi          BIGINT      NOT NULL,
  created_at  BIGINT      NOT NULL,
  PRIMARY KEY (id),
  KEY idx_dellog_reader (topic, deleted_for, low)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
