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
    unindex(p, id, 'D', day, '', cur[2], cur[3])
    n = n + 1
  end
end
return n
