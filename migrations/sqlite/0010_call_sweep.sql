-- Palaver's SQLite schema, version 10: the sweep of live calls whose node died. It reads the live rows of a
-- tenant oldest first; the busy check and the insert of a new call are one write transaction (SQLite has one
-- writer), so they need nothing more.
CREATE INDEX im_calls_live ON im_calls (tenant_id, state, started_at);
