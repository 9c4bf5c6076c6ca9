-- Projects events of the phase-B sink REDIS_FLIGHT onto the flight layout (package
-- redisflight, docs/redis-flights.md), in order, each guarded by its event id: a flight takes
-- an event only if it is newer than the last one it took (the hash's 'eid', or the tombstone
-- {p}gone:{FLID} a delete leaves), so a re-sent, late or replayed older event changes nothing.
-- ARGV: prefix, tombstone ttl seconds, then per event:
--       event id, op ('U' upsert | 'D' delete), FLID, day, maid ('' = none), record, msg, upd.
-- Returns the count of events that changed a flight.
local p, ttl = ARGV[1], tonumber(ARGV[2])
local applied = 0
local i = 3
while i <= #ARGV do
  local eid, op, id, day, maid, rec, msg, upd =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  i = i + 8
  local k, gk = p .. 'flight:' .. id, p .. 'gone:' .. id
  local old = redis.call('HMGET', k, 'ver', 'day', 'maid', 'eid')
  local last = tonumber(old[4]) or 0
  local gone = tonumber(redis.call('GET', gk) or '0') or 0
  if gone > last then last = gone end
  if tonumber(eid) > last then
    applied = applied + 1
    unindex(p, id, op, day, maid, old[2], old[3])
    if op == 'D' then
      redis.call('DEL', k)
      redis.call('SET', gk, eid, 'EX', ttl)
    else
      local ver = (tonumber(old[1]) or 0) + 1
      redis.call('HSET', k, 'rec', rec, 'ver', ver, 'day', day, 'msg', msg, 'upd', upd, 'eid', eid)
      redis.call('DEL', gk)
      index(p, k, id, day, maid, old[3])
    end
  end
end
return applied
