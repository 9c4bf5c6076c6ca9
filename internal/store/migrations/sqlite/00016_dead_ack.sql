-- +goose Up
-- DEAD_ACK: the dead letters an operator acknowledged (a DEAD message or a DEAD event): kept
-- for audit, left out of the dead counts that call for attention; RETENTION purges acknowledged
-- DEAD events older than retention.dead-letters. A replay moves the row out of DEAD: the
-- acknowledgement then no longer counts (the reads join on the current state) and goes.
CREATE TABLE DEAD_ACK (
  KIND VARCHAR(8) NOT NULL,
  REF_ID BIGINT NOT NULL,
  ACKED_BY VARCHAR(64) NOT NULL,
  ACKED_AT TEXT NOT NULL,
  NOTE TEXT NULL,
  PRIMARY KEY (KIND, REF_ID)
);
CREATE INDEX IDX_ACK_AT ON DEAD_ACK (KIND, ACKED_AT);

-- PROBLEM_LOG: the recent problems, newest last, durable across restarts: messages parked,
-- dead or applied with warnings (written by the pump once their outcome is durable) and every
-- operator action (park, replay, pause, acknowledgement). Bounded: the newest rows are kept.
CREATE TABLE PROBLEM_LOG (
  PROBLEM_ID INTEGER PRIMARY KEY AUTOINCREMENT,
  HAPPENED_AT TEXT NOT NULL,
  KIND VARCHAR(32) NOT NULL,
  MSG_ID BIGINT NULL,
  TYPE_TAG VARCHAR(32) NULL,
  STATE VARCHAR(16) NULL,
  ERROR_CLASS VARCHAR(16) NULL,
  ACTOR VARCHAR(64) NULL,
  SUBJECT VARCHAR(128) NULL,
  DETAIL TEXT NULL
);

-- +goose Down
DROP TABLE PROBLEM_LOG;
DROP INDEX IDX_ACK_AT;
DROP TABLE DEAD_ACK;
