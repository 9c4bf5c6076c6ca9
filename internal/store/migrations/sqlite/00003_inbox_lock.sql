-- +goose Up
-- The inbox lock of MySQL (see its migration). SQLite's write lock already orders the inbox
-- transactions; the table exists so both schemas are alike.
CREATE TABLE INBOX_LOCK (
  NAME VARCHAR(16) NOT NULL PRIMARY KEY
);
INSERT INTO INBOX_LOCK (NAME) VALUES ('inbox');

-- +goose Down
DROP TABLE INBOX_LOCK;
