-- Palaver's tenant database, version 3: at most one pending friend request per ordered pair, enforced by the
-- schema so that racing creations cannot both insert.
--
-- Why a generated column and not `SELECT … FOR UPDATE` on the pair: when no request exists yet, a locking read
-- finds no row and takes only a gap lock, which two transactions may hold at once; both then insert, and InnoDB
-- either lets both through or kills one as a deadlock. A UNIQUE index on a column that holds the pair only while
-- the request is pending (NULL otherwise, and NULLs never collide) makes the second insert fail with a duplicate
-- key instead, which the store answers with the request already pending. Decided requests keep NULL, so a pair
-- may have any number of them.
--
-- Repeatable like every migration here. No port wrote friend_requests before this version, so no tenant holds
-- two pending requests for one pair and the index can be built.
ALTER TABLE friend_requests
  ADD COLUMN IF NOT EXISTS pending_pair VARCHAR(41)
    AS (IF(status = 'pending', CONCAT(from_user, ':', to_user), NULL)) PERSISTENT
    COMMENT 'from_user:to_user while pending, else NULL; unique';

CREATE UNIQUE INDEX IF NOT EXISTS uk_friend_requests_pending_pair ON friend_requests (pending_pair);
