-- +goose Up
-- MSG_FLIGHT: the flights (FLIDs) each decoded message names — a FLOP's FLID, each FLTR of a
-- SCHD — written by the pump in the same transaction as the message's outcome, whatever it
-- is (SUCCEEDED, SKIPPED, FAILED, DEAD, parked ORPHAN…), so `GET /api/v1/messages?flid=`
-- finds a flight's messages by an index seek on the primary key, including the ones that
-- changed nothing. A message that could not be decoded names no flight. Retention deletes
-- the rows of the messages it purges.
CREATE TABLE IF NOT EXISTS MSG_FLIGHT (
  FLID BIGINT NOT NULL,
  CMINMSGS_ID BIGINT NOT NULL,
  PRIMARY KEY (FLID, CMINMSGS_ID),
  KEY IDX_MSGF_MSG (CMINMSGS_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Messages processed before this migration: their flights as far as their events tell
-- (a FLIGHT_KEY that is a FLID, 1 to 18 digits so it surely fits a BIGINT).
INSERT IGNORE INTO MSG_FLIGHT (FLID, CMINMSGS_ID)
  SELECT DISTINCT CAST(FLIGHT_KEY AS SIGNED), CMINMSGS_ID FROM MSG_EVENT
  WHERE FLIGHT_KEY REGEXP '^[1-9][0-9]{0,17}$';

-- The console's throughput reads the messages finished in the last hour by this index.
CREATE INDEX IDX_PROC_PROCESSED ON PROC_STATE (PROCESSED_AT);

-- +goose Down
DROP INDEX IDX_PROC_PROCESSED ON PROC_STATE;
DROP TABLE MSG_FLIGHT;
