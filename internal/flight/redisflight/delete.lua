-- Deletes swept flights (HISTORY_SWEEP), each only if still on the day and at the version
-- read. ARGV: prefix, then per flight: FLID, day, version. Returns how many it deleted.
local p = ARGV[1]
local n = 0
local i = 2
while i <= #ARGV do
  local id, day, ver = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  local k = p .. 'flight:' .. id
  local cur = redis.call('HMGET', k, 'ver', 'day', 'maid')
  if cur[1] == ver and cur[2] == day then
    redis.call('DEL', k)
    redis.call('SREM', p .. 'day:' .. day, id)
    if redis.call('SCARD', p .. 'day:' .. day) == 0 then redis.call('SREM', p .. 'days', day) end
    if cur[3] then
      redis.call('SREM', p .. 'maid:' .. cur[3], id)
      redis.call('SREM', p .. 'codeshares', id)
    end
    n = n + 1
  end
end
return n
