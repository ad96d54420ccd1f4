-- Palaver's tenant database, version 10: call starts are ordered per user, and the sweep of stale calls.
--
-- One row per user who ever took part in a call. A new call locks both parties' rows (`SELECT … FOR UPDATE` in
-- key order, so two starts never deadlock) before it checks whether either is in a live call and inserts
-- itself: two calls dialled to one user at the same instant see each other, and the second is stored `busy`.
-- The sweep that ends the live calls of dead nodes reads live rows oldest first. Repeatable like every
-- migration here.

CREATE TABLE IF NOT EXISTS im_call_parties (
  user_id  BIGINT NOT NULL,
  PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX IF NOT EXISTS im_calls_live ON im_calls (state, started_at);
