-- +goose Up
-- REDIS_MARK: phase A's guard against a Redis that lost data (internal/flight/mark.go). One
-- row per Redis key prefix: the epoch msgx gave that Redis's flight picture when it first
-- wrote it (also kept in Redis, {prefix}epoch) and the high-water mark, the highest message
-- id whose flight script Redis has applied as far as SQL knows (Redis keeps its own,
-- {prefix}mark), raised by each batch of the pump in its transaction. Redis without the
-- epoch, with another one, or with a lower mark has lost data: the pump stops applying.
CREATE TABLE IF NOT EXISTS REDIS_MARK (
  KEY_PREFIX VARCHAR(128) NOT NULL PRIMARY KEY,
  EPOCH VARCHAR(64) NOT NULL,
  MSG_ID BIGINT NOT NULL,
  UPDATED_AT DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- +goose Down
DROP TABLE REDIS_MARK;
