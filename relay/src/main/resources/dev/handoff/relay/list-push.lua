-- Pushes a batch of elements onto one list (RPUSH, in order), exactly once, up to a capacity, atomically with a
-- check that Redis still holds what the relay pushed before.
-- KEYS[1]: the list. KEYS[2]: the relay's hash beside it: last_ms/last_seq = the highest ID pushed, added = elements
-- pushed. KEYS[3]: the consumers' registry (field = processing list key). All in one hash slot; the processing lists
-- named in the registry are read too (same slot).
-- ARGV[1]: elements the database knows were pushed (0 when nothing was confirmed yet). ARGV[2]: the capacity, which
-- bounds the elements waiting in the list plus those in the consumers' processing lists.
-- Then per element: ms, seq (its ID, strictly increasing in the relay's assignment order), the element.
-- Reply: {-1, added} when Redis lost the relay's bookkeeping (nothing was pushed; the marker is reset so that the
-- relay's re-publication goes through); otherwise {added, room, status...} with one status per element: 1 pushed,
-- 2 already pushed (its ID is at or below the marker), 4 not sent (capacity reached; so are all that follow).
local added = tonumber(redis.call('HGET', KEYS[2], 'added') or '0')
local recorded = tonumber(ARGV[1])
if added < recorded then
  redis.call('DEL', KEYS[2])
  return {-1, added}
end
local capacity = tonumber(ARGV[2])
local used = redis.call('LLEN', KEYS[1])
local processing = redis.call('HKEYS', KEYS[3])
for p = 1, #processing do
  used = used + redis.call('LLEN', processing[p])
end
-- IDs are kept as the strings the relay sent (a 13-digit ms is exact as a Lua number, but would not print back).
local lastMsText = redis.call('HGET', KEYS[2], 'last_ms')
local lastSeqText = redis.call('HGET', KEYS[2], 'last_seq')
local lastMs = tonumber(lastMsText or '-1')
local lastSeq = tonumber(lastSeqText or '-1')
local reply = {0, 0}
local full = false
local pushed = false
for i = 3, #ARGV, 3 do
  local ms = tonumber(ARGV[i])
  local seq = tonumber(ARGV[i + 1])
  if ms < lastMs or (ms == lastMs and seq <= lastSeq) then
    reply[#reply + 1] = 2
  elseif full or used >= capacity then
    full = true
    reply[#reply + 1] = 4
  else
    redis.call('RPUSH', KEYS[1], ARGV[i + 2])
    used = used + 1
    added = added + 1
    lastMs, lastSeq = ms, seq
    lastMsText, lastSeqText = ARGV[i], ARGV[i + 1]
    pushed = true
    reply[#reply + 1] = 1
  end
end
if pushed then
  redis.call('HSET', KEYS[2], 'last_ms', lastMsText, 'last_seq', lastSeqText, 'added', added)
end
redis.call('HSET', KEYS[2], 'capacity', capacity)
reply[1] = added
reply[2] = capacity - used
return reply
