-- The flight layout's indexes (docs/redis-flights.md), shared by every script of package
-- redisflight: it is put in front of each one, so they keep the day and code-share sets alike.

-- unindex takes flight id out of the sets of its stored day and MAID (oldday, oldmaid: the
-- hash's values, false when absent) that a delete (op 'D') or a new day or MAID leaves; a day
-- set left empty leaves the list of days.
local function unindex(p, id, op, day, maid, oldday, oldmaid)
  if oldday and (op == 'D' or oldday ~= day) then
    redis.call('SREM', p .. 'day:' .. oldday, id)
    if redis.call('SCARD', p .. 'day:' .. oldday) == 0 then redis.call('SREM', p .. 'days', oldday) end
  end
  if oldmaid and (op == 'D' or oldmaid ~= maid) then
    redis.call('SREM', p .. 'maid:' .. oldmaid, id)
    redis.call('SREM', p .. 'codeshares', id)
  end
end

-- index puts flight id (hash k) in the sets of its day and, with a MAID ('' = none), in those of
-- the MAID, writing the hash's maid field; a hash that had one (oldmaid) and has none now loses it.
local function index(p, k, id, day, maid, oldmaid)
  redis.call('SADD', p .. 'day:' .. day, id)
  redis.call('SADD', p .. 'days', day)
  if maid ~= '' then
    redis.call('HSET', k, 'maid', maid)
    redis.call('SADD', p .. 'maid:' .. maid, id)
    redis.call('SADD', p .. 'codeshares', id)
  elseif oldmaid then
    redis.call('HDEL', k, 'maid')
  end
end

