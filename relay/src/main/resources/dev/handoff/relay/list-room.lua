-- How many more elements a list accepts: the capacity minus the elements waiting in the list and those in the
-- consumers' processing lists (the bound covers everything taken and not finished, not only the list).
-- KEYS[1]: the list. KEYS[2]: the relay's hash. KEYS[3]: the consumers' registry. ARGV[1]: the capacity.
local used = redis.call('LLEN', KEYS[1])
local processing = redis.call('HKEYS', KEYS[3])
for p = 1, #processing do
  used = used + redis.call('LLEN', processing[p])
end
redis.call('HSET', KEYS[2], 'capacity', ARGV[1])
return tonumber(ARGV[1]) - used
