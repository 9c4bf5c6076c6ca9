-- +goose Up
-- IDENTITY_KEY compares exactly, as on SQLite: the table's default collation is
-- case-insensitive and PAD SPACE, so `aodb|AIRL|UPD|7` was taken for `AODB|AIRL|UPD|7`, and a
-- key with a trailing space for the one without, and a different message was SKIPPED as a
-- duplicate (utf8mb4_bin would still pad). VARBINARY compares bytes: 640 holds the 160
-- characters of store.IdentityWidth in 4-byte UTF-8. Every key bound so far was unique under
-- the looser collation, so it is unique under this one.
ALTER TABLE PROC_STATE MODIFY IDENTITY_KEY VARBINARY(640) NULL;

-- +goose Down
ALTER TABLE PROC_STATE MODIFY IDENTITY_KEY VARCHAR(160) CHARACTER SET utf8mb4 NULL;
