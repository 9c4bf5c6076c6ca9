-- +goose Up
-- Retention and scheduled jobs, and log correlation (issue 12).
-- TRACE_ID: the W3C trace id of the request that brought the message (traceparent header), so
-- every log line of its journey can carry it; NULL when the sender sent none.
-- ARCHIVED_AT: when ARCHIVE moved the message's text to CMINMSGS_HST; the RETENTION job purges
-- finished rows archived longer than retention.archive. Rows archived before this migration
-- take their processing time (archive moves only rows processed at least a day before).
-- SCHEDULE_KEY: the scheduler's key of a job (kind and local day), unique, so a restart or a
-- second instance never enqueues the same day's job twice; NULL for jobs enqueued by hand.
ALTER TABLE PROC_STATE ADD COLUMN TRACE_ID VARCHAR(32) NULL;
ALTER TABLE PROC_STATE ADD COLUMN ARCHIVED_AT TEXT NULL;
UPDATE PROC_STATE SET ARCHIVED_AT = PROCESSED_AT
  WHERE STATE IN ('SUCCEEDED', 'SKIPPED') AND PROCESSED_AT IS NOT NULL
    AND CMINMSGS_ID IN (SELECT CMINMSGS_ID FROM CMINMSGS_HST);
CREATE INDEX IDX_PROC_ARCHIVED ON PROC_STATE (ARCHIVED_AT);
ALTER TABLE PUMP_JOB ADD COLUMN SCHEDULE_KEY VARCHAR(64) NULL;
CREATE UNIQUE INDEX UK_JOB_SCHEDULE ON PUMP_JOB (SCHEDULE_KEY);

-- +goose Down
DROP INDEX UK_JOB_SCHEDULE;
ALTER TABLE PUMP_JOB DROP COLUMN SCHEDULE_KEY;
DROP INDEX IDX_PROC_ARCHIVED;
ALTER TABLE PROC_STATE DROP COLUMN ARCHIVED_AT;
ALTER TABLE PROC_STATE DROP COLUMN TRACE_ID;
