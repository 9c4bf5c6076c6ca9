-- +goose Up
-- The delivery mark: a target's events are delivered in EVENT_ID order, so a round that
-- delivers a run raises the target's mark (MSG_EVENT_SENT.UPTO_EVENT_ID) instead of updating
-- each event's row. A PENDING row at or below its target's mark is SENT; DEAD, SENT and
-- RETRY (a replayed event: pending whatever the mark) rows keep their own state. Each raise
-- is kept in MSG_EVENT_MARK with its time: an event's sent time is that of the first raise at
-- or above its id. A mark of 0 covers nothing, so the rows present keep their meaning.
ALTER TABLE MSG_EVENT_SENT ADD COLUMN UPTO_EVENT_ID BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS MSG_EVENT_MARK (
  TARGET VARCHAR(64) NOT NULL,
  UPTO_EVENT_ID BIGINT NOT NULL,
  SENT_AT DATETIME(6) NOT NULL,
  PRIMARY KEY (TARGET, UPTO_EVENT_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- +goose Down
-- Back to one state per row: the covered rows SENT at their raise's time, replayed ones PENDING.
UPDATE MSG_EVENT SET STATE = 'SENT', NEXT_ATTEMPT_AT = NULL, SENT_AT = (SELECT m.SENT_AT FROM MSG_EVENT_MARK m
  WHERE m.TARGET = MSG_EVENT.TARGET AND m.UPTO_EVENT_ID >= MSG_EVENT.EVENT_ID ORDER BY m.UPTO_EVENT_ID LIMIT 1)
WHERE STATE = 'PENDING' AND EVENT_ID <= (SELECT s.UPTO_EVENT_ID FROM MSG_EVENT_SENT s WHERE s.TARGET = MSG_EVENT.TARGET);
UPDATE MSG_EVENT SET STATE = 'PENDING' WHERE STATE = 'RETRY';
DROP TABLE MSG_EVENT_MARK;
ALTER TABLE MSG_EVENT_SENT DROP COLUMN UPTO_EVENT_ID;
