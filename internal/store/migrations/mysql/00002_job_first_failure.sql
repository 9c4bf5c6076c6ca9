-- +goose Up
-- A failing job is escalated by the head deadline like a message, measured from its first
-- failure.
ALTER TABLE PUMP_JOB ADD COLUMN FIRST_FAILED_AT DATETIME(6) NULL;

-- +goose Down
ALTER TABLE PUMP_JOB DROP COLUMN FIRST_FAILED_AT;
