-- +goose Up
-- The code-share master (MAID) a flight names, out of its JSON record into an indexed column,
-- so that finding the code-share flights of a master is an index seek instead of a scan of
-- every stored record. NULL when the record names none. The flight store keeps it up to date on
-- every write; existing rows are filled from their records here.
ALTER TABLE FLIGHT_STATE ADD COLUMN MAID BIGINT NULL;
UPDATE FLIGHT_STATE SET MAID = CASE WHEN json_valid(RECORD) THEN
  CASE WHEN json_type(RECORD, '$.MAID') = 'integer' THEN json_extract(RECORD, '$.MAID') END END;
CREATE INDEX IX_FLIGHT_MAID ON FLIGHT_STATE (MAID);

-- +goose Down
DROP INDEX IX_FLIGHT_MAID;
ALTER TABLE FLIGHT_STATE DROP COLUMN MAID;
