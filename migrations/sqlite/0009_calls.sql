-- Palaver's SQLite schema, version 9: one-to-one calls. Same conventions as 0001: every key starts with
-- tenant_id, user ids are 64-bit integers reinterpreted as signed, times are Unix milliseconds. The columns match
-- the MariaDB table of the tenant migration 0009.

-- One row per call, keyed by the P2P topic and the seq of the `{pub head:{webrtc:"started"}}` message that
-- started it. `state` only moves forward, each move one `UPDATE … WHERE state = …`.
CREATE TABLE im_calls (
    tenant_id       INTEGER NOT NULL,
    topic           TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    caller_id       INTEGER NOT NULL,
    callee_id       INTEGER NOT NULL,
    caller_session  TEXT    NOT NULL,
    callee_session  TEXT    NOT NULL DEFAULT '',
    audio_only      INTEGER NOT NULL DEFAULT 0,
    state           TEXT    NOT NULL,
    started_at      INTEGER NOT NULL,
    accepted_at     INTEGER,
    ended_at        INTEGER,
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    end_reason      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, topic, seq)
);

-- "Is this user in a call?" (busy) reads the live calls of either party.
CREATE INDEX im_calls_caller ON im_calls (tenant_id, caller_id, state);
CREATE INDEX im_calls_callee ON im_calls (tenant_id, callee_id, state);
