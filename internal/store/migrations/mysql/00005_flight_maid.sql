-- +goose Up
-- The code-share master (MAID) a flight names, out of its JSON record into an indexed column,
-- so that finding the code-share flights of a master is an index seek instead of a scan of
-- every stored record. NULL when the record names none. The flight store keeps it up to date on
-- every write; existing rows are filled from their records here (JSON_VALUE: MariaDB 10.2.3+,
-- MySQL 8.0.21+; a JSON null or an absent MAID gives NULL).
ALTER TABLE FLIGHT_STATE ADD COLUMN MAID BIGINT NULL, ADD INDEX IX_FLIGHT_MAID (MAID);
UPDATE FLIGHT_STATE SET MAID = CAST(JSON_VALUE(RECORD, '$.MAID') AS SIGNED)
  WHERE JSON_VALUE(RECORD, '$.MAID') IS NOT NULL;

-- +goose Down
ALTER TABLE FLIGHT_STATE DROP INDEX IX_FLIGHT_MAID, DROP COLUMN MAID;
