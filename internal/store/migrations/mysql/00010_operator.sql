-- +goose Up
-- What operators need beside the queue itself.
-- MSG_HISTORY: one row per recorded outcome of a message other than success (each failed
-- attempt, a DEAD, a SKIPPED) and per operator action on it (park, replay), so a message's
-- history is more than its last state. The success is PROC_STATE's own row.
CREATE TABLE MSG_HISTORY (
  HIST_ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  CMINMSGS_ID BIGINT NOT NULL,
  HAPPENED_AT DATETIME(6) NOT NULL,
  STATE VARCHAR(16) NOT NULL,
  ERROR_CLASS VARCHAR(16) NULL,
  ATTEMPTS INT NOT NULL DEFAULT 0,
  DETAIL TEXT NULL,
  ACTOR VARCHAR(64) NULL,
  KEY IDX_HIST_MSG (CMINMSGS_ID, HIST_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- AUDIT_LOG: every operator action (who, what, on what, with which answer).
CREATE TABLE AUDIT_LOG (
  AUDIT_ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  HAPPENED_AT DATETIME(6) NOT NULL,
  ACTOR VARCHAR(64) NOT NULL,
  ACTOR_ROLE VARCHAR(16) NOT NULL,
  ACTION_KIND VARCHAR(32) NOT NULL,
  SUBJECT VARCHAR(128) NULL,
  DETAIL TEXT NULL,
  REMOTE VARCHAR(64) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- PAUSE_STATE: a row per paused part ('pump', 'target:<NAME>'); no row means running. In the
-- database, so a pause survives a restart and holds on whichever instance runs the pump.
CREATE TABLE PAUSE_STATE (
  NAME VARCHAR(80) NOT NULL PRIMARY KEY,
  PAUSED_BY VARCHAR(64) NOT NULL,
  REASON TEXT NULL,
  PAUSED_AT DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A flight's messages and events are found through the events that carry its FLID.
CREATE INDEX IDX_EVT_FLIGHT ON MSG_EVENT (FLIGHT_KEY, EVENT_ID);

-- +goose Down
DROP INDEX IDX_EVT_FLIGHT ON MSG_EVENT;
DROP TABLE PAUSE_STATE;
DROP TABLE AUDIT_LOG;
DROP TABLE MSG_HISTORY;
