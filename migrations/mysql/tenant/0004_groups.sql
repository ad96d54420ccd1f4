-- Palaver's tenant database, version 4: what the group governance port needs beyond the group tables of 0002
-- (roles, mutes, announcements and their read marks): per-group settings, and join requests with at most one
-- pending request per user and group enforced by the schema, so that racing creations cannot both insert.
--
-- Why a generated column and not `SELECT … FOR UPDATE` on (topic, user_id), as 0003 explains for friend requests:
-- when no request exists yet, a locking read finds no row and takes only a gap lock, which two transactions may
-- hold at once; both then insert, and InnoDB either lets both through or kills one as a deadlock. A UNIQUE index
-- on a column that holds the pair only while the request is pending (NULL otherwise, and NULLs never collide)
-- makes the second insert fail with a duplicate key instead, which the store answers with the request already
-- pending. Decided requests keep NULL, so a user may have any number of them in one group.
--
-- group_settings doubles as each group's lock row, for the same gap-lock reason: before the store counts admins
-- or reads the owner, it makes sure the group's settings row exists and reads it `FOR UPDATE`, so grants,
-- transfers and first owners of one group take turns even when the role rows they care about do not exist yet.
-- A row that exists only as that lock has NULL join_policy and updated_at and reads as the default settings.
--
-- Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS group_settings (
  topic          VARCHAR(64) NOT NULL,
  join_policy    VARCHAR(16) NULL COMMENT 'open/approval/closed; NULL while the row is only the group lock',
  members_invite TINYINT(1)  NOT NULL DEFAULT 0 COMMENT 'plain members may invite',
  updated_at     DATETIME(3) NULL COMMENT 'when the settings were stored; NULL while the row is only the group lock',
  PRIMARY KEY (topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A request by user_id to join topic (inviter NULL), or an invite of user_id by inviter.
CREATE TABLE IF NOT EXISTS group_join_requests (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  topic       VARCHAR(64)  NOT NULL,
  user_id     BIGINT       NOT NULL,
  inviter     BIGINT       NULL,
  message     VARCHAR(512) NULL,
  status      VARCHAR(16)  NOT NULL DEFAULT 'pending' COMMENT 'pending/accepted/rejected/cancelled/expired',
  handled_by  BIGINT       NULL,
  handled_at  DATETIME(3)  NULL,
  created_at  DATETIME(3)  NOT NULL,
  updated_at  DATETIME(3)  NOT NULL,
  pending_key VARCHAR(85)
    AS (IF(status = 'pending', CONCAT(topic, ':', user_id), NULL)) PERSISTENT
    COMMENT 'topic:user_id while pending, else NULL; unique',
  PRIMARY KEY (id),
  UNIQUE KEY uk_group_join_requests_pending (pending_key),
  KEY idx_group_join_requests_topic_status (topic, status, id),
  KEY idx_group_join_requests_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
