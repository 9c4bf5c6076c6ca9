-- Writes a chunk of REDIS_RESTORE in phase A (Redis written back from its FLIGHT_STATE mirror,
-- package redisflight, restore.go): each flight's hash replaced whole by FLIGHT_STATE's row,
-- or deleted when FLIGHT_STATE does not hold it, its day and code-share sets kept.
-- ARGV: prefix, then per flight: op ('U' | 'D'), FLID, day, maid ('' = none), record,
--       version, msg, upd.
-- Returns {written (was absent), replaced (was there), deleted}.
local p = ARGV[1]
local written, replaced, deleted = 0, 0, 0
local i = 2
while i <= #ARGV do
  local op, id, day, maid, rec, ver, msg, upd =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  i = i + 8
  local k = p .. 'flight:' .. id
  local old = redis.call('HMGET', k, 'day', 'maid', 'ver')
  unindex(p, id, op, day, maid, old[1], old[2])
  redis.call('DEL', k)
  if op == 'D' then
    if old[3] then deleted = deleted + 1 end
  else
    redis.call('HSET', k, 'rec', rec, 'ver', ver, 'day', day, 'msg', msg, 'upd', upd)
    index(p, k, id, day, maid, false)
    if old[3] then replaced = replaced + 1 else written = written + 1 end
  end
end
return {written, replaced, deleted}
