-- +goose Up
-- Retention and scheduled jobs, and log correlation (issue 12).
-- TRACE_ID: the W3C trace id of the request that brought the message (traceparent header), so
-- every log line of its journey can carry it; NULL when the sender sent none.
-- ARCHIVED_AT: when ARCHIVE moved the message's text to CMINMSGS_HST; the RETENTION job purges
-- finished rows archived longer than retention.archive. Rows archived before this migration
-- take their processing time (archive moves only rows processed at least a day before).
-- SCHEDULE_KEY: the scheduler's key of a job (kind and local day), unique, so a restart or a
-- second instance never enqueues the same day's job twice; NULL for jobs enqueued by hand.
ALTER TABLE PROC_STATE ADD COLUMN TRACE_ID VARCHAR(32) NULL, ADD COLUMN ARCHIVED_AT DATETIME(6) NULL;
UPDATE PROC_STATE p JOIN CMINMSGS_HST h ON h.CMINMSGS_ID = p.CMINMSGS_ID SET p.ARCHIVED_AT = p.PROCESSED_AT
  WHERE p.STATE IN ('SUCCEEDED', 'SKIPPED') AND p.PROCESSED_AT IS NOT NULL;
ALTER TABLE PROC_STATE ADD INDEX IDX_PROC_ARCHIVED (ARCHIVED_AT);
ALTER TABLE PUMP_JOB ADD COLUMN SCHEDULE_KEY VARCHAR(64) NULL, ADD UNIQUE KEY UK_JOB_SCHEDULE (SCHEDULE_KEY);

-- +goose Down
ALTER TABLE PUMP_JOB DROP INDEX UK_JOB_SCHEDULE, DROP COLUMN SCHEDULE_KEY;
ALTER TABLE PROC_STATE DROP INDEX IDX_PROC_ARCHIVED, DROP COLUMN ARCHIVED_AT, DROP COLUMN TRACE_ID;
