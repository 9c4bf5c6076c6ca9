-- Writes a chunk of PROJECTION_REBUILD in phase B (Redis rebuilt from FLIGHT_STATE, package
-- redisflight): each flight replaced whole by FLIGHT_STATE's row, or deleted, and marked with
-- the rebuild's watermark (the newest event id when the rebuild ran) so that no REDIS_FLIGHT
-- event older than the rebuild overwrites it afterwards (project.lua).
-- ARGV: prefix, watermark, tombstone ttl seconds, then per flight:
--       op ('U' | 'D'), FLID, day, maid ('' = none), record, version, msg, upd.
-- Returns {written, deleted}.
local p, wm, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local written, deleted = 0, 0
local i = 4
while i <= #ARGV do
  local op, id, day, maid, rec, ver, msg, upd =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  i = i + 8
  local k, gk = p .. 'flight:' .. id, p .. 'gone:' .. id
  local old = redis.call('HMGET', k, 'day', 'maid')
  unindex(p, id, op, day, maid, old[1], old[2])
  redis.call('DEL', k)
  if op == 'D' then
    redis.call('SET', gk, wm, 'EX', ttl)
    deleted = deleted + 1
  else
    redis.call('DEL', gk)
    redis.call('HSET', k, 'rec', rec, 'ver', ver, 'day', day, 'msg', msg, 'upd', upd, 'eid', wm)
    index(p, k, id, day, maid, false)
    written = written + 1
  end
end
return {written, deleted}
