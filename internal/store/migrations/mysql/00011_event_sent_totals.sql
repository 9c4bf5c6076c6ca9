-- +goose Up
-- How many events each target has had marked SENT, kept in the transaction that marks them
-- (store.EventTx.MarkSent), so `msgx status` and the metrics read a target's SENT count from
-- one row instead of counting millions of MSG_EVENT rows. It counts every event ever sent:
-- rows that retention later deletes stay counted. Seeded from the rows present now.
CREATE TABLE IF NOT EXISTS MSG_EVENT_SENT (
  TARGET VARCHAR(64) NOT NULL PRIMARY KEY,
  SENT BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO MSG_EVENT_SENT (TARGET, SENT) SELECT TARGET, COUNT(*) FROM MSG_EVENT WHERE STATE = 'SENT' GROUP BY TARGET;

-- +goose Down
DROP TABLE MSG_EVENT_SENT;
