-- +goose Up
-- The adoption looks for CMINMSGS rows nobody has taken (CMINMSGS_DATE_PROCESSED empty): at
-- every pump start, lease take-over and sweep. Without an index that read the whole table (21 s
-- for a million rows on MariaDB); with it, only the rows not taken yet, since msgx sets the
-- date on every row it inserts or adopts and the legacy on every row it processes. On a legacy
-- CMINMSGS this adds an index to the gateway's table; the gateway's own statements are not
-- changed by it.
CREATE INDEX IF NOT EXISTS IDX_CMINMSGS_UNTAKEN ON CMINMSGS (CMINMSGS_DATE_PROCESSED, CMINMSGS_ID);

-- +goose Down
DROP INDEX IDX_CMINMSGS_UNTAKEN ON CMINMSGS;
