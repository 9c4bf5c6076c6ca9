-- +goose Up
-- One row that every inbox transaction locks (SELECT … FOR UPDATE) before it inserts, so two
-- inbox nodes take CMINMSGS ids in the order they commit and the pump never sees a higher id
-- before a lower one, whatever the isolation level.
CREATE TABLE INBOX_LOCK (
  NAME VARCHAR(16) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO INBOX_LOCK (NAME) VALUES ('inbox');

-- +goose Down
DROP TABLE INBOX_LOCK;
