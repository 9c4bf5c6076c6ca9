-- +goose Up
-- What processing did and what it noticed on the way (an FLTR left out of a snapshot, an
-- unknown element ignored) are kept with the message, so an operator sees them without the log.
-- WARNINGS is a JSON array of strings.
ALTER TABLE PROC_STATE ADD COLUMN NOTE TEXT NULL;
ALTER TABLE PROC_STATE ADD COLUMN WARNINGS TEXT NULL;

-- +goose Down
ALTER TABLE PROC_STATE DROP COLUMN WARNINGS;
ALTER TABLE PROC_STATE DROP COLUMN NOTE;
