-- Adds a batch of entries with explicit IDs to one stream, atomically with a check that Redis still holds what
-- the relay added before.
-- KEYS[1]: the stream. KEYS[2]: the relay's hash beside it (same hash slot), field "added" = entries added.
-- ARGV[1]: entries the database knows were added (0 when nothing was confirmed yet).
-- Then per entry: id, message_id, field count n, n fields (name, value, name, value, ...).
-- Reply: {-1, added} when Redis lost the stream (nothing was added); otherwise {added, status...} with one status
-- per entry: 1 added, 2 already present with the same message_id, 3 present with another message_id,
-- 0 refused (ID not above the top) and absent.
local added = tonumber(redis.call('HGET', KEYS[2], 'added') or '0')
local recorded = tonumber(ARGV[1])
if added < recorded or (recorded > 0 and redis.call('EXISTS', KEYS[1]) == 0) then
  return {-1, added}
end
local reply = {0}
local i = 2
local argc = #ARGV
while i <= argc do
  local id = ARGV[i]
  local messageId = ARGV[i + 1]
  local n = tonumber(ARGV[i + 2])
  local r = redis.pcall('XADD', KEYS[1], id, unpack(ARGV, i + 3, i + 2 + n))
  if type(r) == 'table' and r.err then
    if not string.find(r.err, 'equal or smaller', 1, true) then
      redis.call('HSET', KEYS[2], 'added', added)
      return redis.error_reply(r.err)
    end
    local found = redis.call('XRANGE', KEYS[1], id, id)
    if #found == 0 then
      reply[#reply + 1] = 0
    else
      local status = 3
      local fields = found[1][2]
      for f = 1, #fields, 2 do
        if fields[f] == 'message_id' and fields[f + 1] == messageId then
          status = 2
        end
      end
      reply[#reply + 1] = status
    end
  else
    added = added + 1
    reply[#reply + 1] = 1
  end
  i = i + 3 + n
end
redis.call('HSET', KEYS[2], 'added', added)
reply[1] = added
return reply
