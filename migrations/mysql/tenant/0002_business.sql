-- Palaver's tenant database, version 2: the business tables later features build on (friends, blocklist, group
-- roles, mutes and announcements, system notifications, the audit log). No port reads or writes them yet; they
-- are created now so that those features add code, not schema, and every tenant database has the same shape.
--
-- Same conventions as 0001 (repeatable statements, utf8mb4_bin identifiers, BIGINT user ids), with times as
-- DATETIME(3) UTC in the seed's style, since these tables are read by operators and admin tools as much as by
-- the server.

-- A friendship is stored once per direction, so each side keeps its own remark and list placement.
CREATE TABLE IF NOT EXISTS friends (
  user_id    BIGINT       NOT NULL,
  friend_id  BIGINT       NOT NULL,
  remark     VARCHAR(255) NULL COMMENT 'the name user_id gave friend_id',
  list_name  VARCHAR(64)  NULL COMMENT 'the contact list user_id filed friend_id under',
  source     VARCHAR(32)  NOT NULL DEFAULT 'request' COMMENT 'request/import/admin',
  created_at DATETIME(3)  NOT NULL,
  updated_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (user_id, friend_id),
  KEY idx_friends_friend (friend_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS friend_requests (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  from_user  BIGINT       NOT NULL,
  to_user    BIGINT       NOT NULL,
  message    VARCHAR(512) NULL,
  status     VARCHAR(16)  NOT NULL DEFAULT 'pending' COMMENT 'pending/accepted/rejected/cancelled/expired',
  handled_at DATETIME(3)  NULL,
  expires_at DATETIME(3)  NULL,
  created_at DATETIME(3)  NOT NULL,
  updated_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (id),
  KEY idx_friend_requests_to_status (to_user, status, created_at),
  KEY idx_friend_requests_from (from_user, created_at),
  KEY idx_friend_requests_pair (from_user, to_user, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- user_id blocked blocked_id: blocked_id can neither message user_id nor see their presence.
CREATE TABLE IF NOT EXISTS user_blocks (
  user_id    BIGINT       NOT NULL,
  blocked_id BIGINT       NOT NULL,
  reason     VARCHAR(255) NULL,
  created_at DATETIME(3)  NOT NULL,
  PRIMARY KEY (user_id, blocked_id),
  KEY idx_user_blocks_blocked (blocked_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Business roles in a group on top of Tinode's access modes; a member without a row is a plain member.
CREATE TABLE IF NOT EXISTS group_member_roles (
  topic      VARCHAR(64) NOT NULL,
  user_id    BIGINT      NOT NULL,
  role       VARCHAR(16) NOT NULL DEFAULT 'member' COMMENT 'owner/admin/member',
  granted_by BIGINT      NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (topic, user_id),
  KEY idx_group_member_roles_role (topic, role),
  KEY idx_group_member_roles_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A mute of one member, or of the whole group when user_id is 0 (never a valid user id). muted_until NULL means
-- until lifted.
CREATE TABLE IF NOT EXISTS group_mutes (
  topic       VARCHAR(64)  NOT NULL,
  user_id     BIGINT       NOT NULL DEFAULT 0,
  muted_by    BIGINT       NULL,
  reason      VARCHAR(255) NULL,
  muted_until DATETIME(3)  NULL,
  created_at  DATETIME(3)  NOT NULL,
  updated_at  DATETIME(3)  NOT NULL,
  PRIMARY KEY (topic, user_id),
  KEY idx_group_mutes_user (user_id),
  KEY idx_group_mutes_until (muted_until)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Announcements keep their history: an edit bumps version, a removal sets deleted_at.
CREATE TABLE IF NOT EXISTS group_announcements (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  topic       VARCHAR(64)  NOT NULL,
  author      BIGINT       NOT NULL,
  title       VARCHAR(255) NULL,
  content     JSON         NOT NULL COMMENT 'text or Drafty',
  pinned      TINYINT(1)   NOT NULL DEFAULT 0,
  require_ack TINYINT(1)   NOT NULL DEFAULT 0 COMMENT 'members must confirm having read it',
  version     INT          NOT NULL DEFAULT 1,
  created_at  DATETIME(3)  NOT NULL,
  updated_at  DATETIME(3)  NOT NULL,
  deleted_at  DATETIME(3)  NULL,
  PRIMARY KEY (id),
  KEY idx_group_announcements_topic (topic, deleted_at, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS group_announcement_reads (
  announcement_id BIGINT      NOT NULL,
  user_id         BIGINT      NOT NULL,
  read_at         DATETIME(3) NOT NULL,
  acked_at        DATETIME(3) NULL COMMENT 'set when the member confirmed an announcement that requires it',
  PRIMARY KEY (announcement_id, user_id),
  KEY idx_group_announcement_reads_user (user_id, read_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Notices from the system to one user (friend request received, removed from a group, moderation outcome).
CREATE TABLE IF NOT EXISTS im_system_notifications (
  id           BIGINT      NOT NULL AUTO_INCREMENT,
  user_id      BIGINT      NOT NULL,
  kind         VARCHAR(32) NOT NULL COMMENT 'friend_request/group_invite/group_removed/moderation/…',
  content      JSON        NOT NULL,
  source_topic VARCHAR(64) NULL,
  source_seq   BIGINT      NULL,
  read_at      DATETIME(3) NULL,
  expires_at   DATETIME(3) NULL,
  created_at   DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY idx_im_system_notifications_user (user_id, read_at, created_at),
  KEY idx_im_system_notifications_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Who did what to which record, for operators and compliance (seed §6.1). Rows are only ever inserted.
CREATE TABLE IF NOT EXISTS audit_log (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  actor_kind  VARCHAR(16)  NOT NULL COMMENT 'user/admin/system/plugin',
  actor_id    BIGINT       NULL,
  action      VARCHAR(64)  NOT NULL COMMENT 'e.g. message.audit, group.mute, tenant.disable',
  target_kind VARCHAR(32)  NOT NULL COMMENT 'user/topic/message/tenant/…',
  target_id   VARCHAR(128) NOT NULL,
  topic       VARCHAR(64)  NULL,
  seqid       BIGINT       NULL,
  detail      JSON         NULL,
  client_ip   VARCHAR(45)  NULL,
  created_at  DATETIME(3)  NOT NULL,
  PRIMARY KEY (id),
  KEY idx_audit_log_created (created_at),
  KEY idx_audit_log_target (target_kind, target_id, created_at),
  KEY idx_audit_log_actor (actor_kind, actor_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
