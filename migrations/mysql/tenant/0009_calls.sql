-- Palaver's tenant database, version 9: one-to-one calls.
--
-- One row per call, keyed by the P2P topic and the seq of the `{pub head:{webrtc:"started"}}` message that
-- started it. `state` only moves forward, each move one `UPDATE … WHERE state = …`. Times are BIGINT Unix
-- milliseconds like the other port-backed tables, so the ending update computes the duration in the same
-- statement. Repeatable like every migration here.

CREATE TABLE IF NOT EXISTS im_calls (
  topic           VARCHAR(64)  NOT NULL,
  seq             BIGINT       NOT NULL,
  caller_id       BIGINT       NOT NULL,
  callee_id       BIGINT       NOT NULL,
  caller_session  VARCHAR(128) NOT NULL,
  callee_session  VARCHAR(128) NOT NULL DEFAULT '',
  audio_only      TINYINT(1)   NOT NULL DEFAULT 0,
  state           VARCHAR(16)  NOT NULL,
  started_at      BIGINT       NOT NULL,
  accepted_at     BIGINT       NULL,
  ended_at        BIGINT       NULL,
  duration_ms     BIGINT       NOT NULL DEFAULT 0,
  end_reason      VARCHAR(32)  NOT NULL DEFAULT '',
  PRIMARY KEY (topic, seq),
  KEY im_calls_caller (caller_id, state),
  KEY im_calls_callee (callee_id, state)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
