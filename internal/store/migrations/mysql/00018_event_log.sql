-- +goose Up
-- The outbox as a log (issue 36): the pump writes each flight change once, a row of TARGET '*'
-- holding the change's canonical encoding (kind "change"), which every target takes and
-- renders at delivery. A target's state of a shared row is its delivery mark's (SENT at or
-- below it, else PENDING); only an event that leaves the happy path for a target (backed off,
-- DEAD, replayed, sent out of order) gets a row of its own, (EVENT_ID, TARGET), a copy of the
-- shared row with the target's state: hence the primary key (EVENT_ID, TARGET). Rows written
-- per target before the upgrade keep their ids and states and drain as they are.
--
-- Event ids come from the MSGX_COUNTER row EVENT_ID (one sequence for every row, kept across
-- deletes), seeded above every id the table ever gave out, so every target's ids keep rising.
-- Each statement can run again after a kill (MySQL's DDL is not transactional).
INSERT INTO MSGX_COUNTER (NAME, VALUE, UPDATED_AT)
SELECT 'EVENT_ID', GREATEST(COALESCE((SELECT MAX(EVENT_ID) FROM MSG_EVENT), 0),
  COALESCE((SELECT AUTO_INCREMENT - 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'MSG_EVENT'), 0)), NOW(6)
ON DUPLICATE KEY UPDATE VALUE = VALUE;
ALTER TABLE MSG_EVENT MODIFY EVENT_ID BIGINT NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (EVENT_ID, TARGET);
-- An older msgx still pumping while this one migrates (it holds the lease while a standby is
-- upgraded first) took ids from the AUTO_INCREMENT until the ALTER ended, above the seed: the
-- sequence goes past them too. From here on its inserts, which name no EVENT_ID, are refused.
UPDATE MSGX_COUNTER SET VALUE = GREATEST(VALUE, (SELECT COALESCE(MAX(EVENT_ID), 0) FROM MSG_EVENT)) WHERE NAME = 'EVENT_ID';

-- Which shared rows a target takes: those above FROM_EVENT_ID (0 for the four targets the
-- handlers emit to, which take every one; the log's end when a copy-of target is first
-- configured) and up to TO_EVENT_ID while it is not configured (NULL: open).
ALTER TABLE MSG_EVENT_SENT ADD COLUMN IF NOT EXISTS FROM_EVENT_ID BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS TO_EVENT_ID BIGINT NULL;
INSERT IGNORE INTO MSG_EVENT_SENT (TARGET, SENT, UPTO_EVENT_ID) VALUES ('KAFKA_FLOP', 0, 0), ('KAFKA_SCHD', 0, 0),
  ('REDIS_NOTIFY', 0, 0), ('ES_FLIGHT', 0, 0);

-- +goose Down
-- Only before any shared row was written: a database with rows of TARGET '*' cannot go back.
ALTER TABLE MSG_EVENT DROP PRIMARY KEY, ADD PRIMARY KEY (EVENT_ID), MODIFY EVENT_ID BIGINT NOT NULL AUTO_INCREMENT;
-- The AUTO_INCREMENT goes on from the sequence, not from the largest id left (what MODIFY
-- sets): ids given and since purged are never given again, as a delivery mark may already be
-- past them. ALTER TABLE takes no expression, hence the prepared statement.
SET @msgx_event_next = (SELECT COALESCE(MAX(VALUE), 0) + 1 FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID');
SET @msgx_event_alter = CONCAT('ALTER TABLE MSG_EVENT AUTO_INCREMENT = ', @msgx_event_next);
PREPARE msgx_event_seq FROM @msgx_event_alter;
EXECUTE msgx_event_seq;
DEALLOCATE PREPARE msgx_event_seq;
ALTER TABLE MSG_EVENT_SENT DROP COLUMN TO_EVENT_ID, DROP COLUMN FROM_EVENT_ID;
DELETE FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID';
