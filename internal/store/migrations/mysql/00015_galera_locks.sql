-- +goose Up
-- On a Galera cluster a row lock taken with SELECT … FOR UPDATE is local to its node and is not
-- part of the write set, so two nodes could both "hold" it. The inbox lock and the pump's fence
-- check therefore write their row (these counters): two transactions that take the same lock on
-- two nodes then conflict at certification, and one of them fails (1213) and is redone.
ALTER TABLE INBOX_LOCK ADD COLUMN TAKEN BIGINT NOT NULL DEFAULT 0;
ALTER TABLE PUMP_LEASE ADD COLUMN FENCE_CHECKS BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE PUMP_LEASE DROP COLUMN FENCE_CHECKS;
ALTER TABLE INBOX_LOCK DROP COLUMN TAKEN;
