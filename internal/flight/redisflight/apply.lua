-- Applies one message's flight writes (package redisflight, docs/redis-flights.md).
-- ARGV: prefix, msg id, marker ('' = none), marker ttl seconds, now,
--       epoch ('' = no guard), mark expected ('' = not compared), n,
--       then n pairs (FLID, version read; '0' = absent),
--       then per write: op ('U' upsert | 'D' delete), FLID, day, maid ('' = none), record.
-- Returns {0} applied, {1, marker} already applied (nothing written), {2, FLID, version}
-- a version moved since it was read (nothing written), {3, epoch, mark} Redis lost data:
-- its epoch or its high-water mark is not the one the pump knows (nothing written; mark.go).
local p, msg, marker, ttl, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local epoch, want = ARGV[6], ARGV[7]
local mk = p .. 'marker:' .. msg
local hw = 0
if epoch ~= '' then
  local cur = redis.call('GET', p .. 'epoch')
  local m = redis.call('GET', p .. 'mark')
  if cur ~= epoch or (want ~= '' and tonumber(m or '-1') ~= tonumber(want)) then
    return {3, cur or '', m or ''}
  end
  hw = tonumber(m or '0')
end
if marker ~= '' then
  local prev = redis.call('GET', mk)
  if prev then return {1, prev} end
end
local n = tonumber(ARGV[8])
local i = 9
for _ = 1, n do
  local id, want = ARGV[i], ARGV[i + 1]
  i = i + 2
  local cur = redis.call('HGET', p .. 'flight:' .. id, 'ver') or '0'
  if cur ~= want then return {2, id, cur} end
end
while i <= #ARGV do
  local op, id, day, maid, rec = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  i = i + 5
  local k = p .. 'flight:' .. id
  local old = redis.call('HMGET', k, 'ver', 'day', 'maid')
  unindex(p, id, op, day, maid, old[2], old[3])
  if op == 'D' then
    redis.call('DEL', k)
  else
    local ver = (tonumber(old[1]) or 0) + 1
    redis.call('HSET', k, 'rec', rec, 'ver', ver, 'day', day, 'msg', msg, 'upd', now)
    index(p, k, id, day, maid, old[3])
  end
end
if epoch ~= '' and tonumber(msg) > hw then
  redis.call('SET', p .. 'mark', msg)
end
if marker ~= '' then
  if ttl > 0 then
    redis.call('SET', mk, marker, 'EX', ttl)
  else
    redis.call('SET', mk, marker)
  end
end
return {0}
