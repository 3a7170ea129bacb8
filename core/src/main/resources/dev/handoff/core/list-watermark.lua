-- (element_header comes first: see ListScripts.)
-- The point below which every pushed element is finished (acknowledged or dead-lettered): the lowest ID still in
-- the list or in a processing list; when there is none, just above the last pushed ID. An element leaves the list
-- and processing lists only by LREM after its consumer committed, so everything below that point is done.
-- The list is scanned whole: the reaper puts returned elements back at its head, so the head is not always lowest.
-- KEYS[1]: the list. KEYS[2]: the relay's hash. KEYS[3]: the consumers' registry.
-- Reply: {"ms-seq" or "" when nothing was ever pushed, 0, 1 or 0 (whether the point may be stored)}.
local bestMs, bestSeq, bestText = nil, nil, nil
local function consider(element)
  local id, _, m, s = element_header(element)
  if id and (bestMs == nil or m < bestMs or (m == bestMs and s < bestSeq)) then
    bestMs, bestSeq, bestText = m, s, id
  end
end
local function scan(key)
  local n = redis.call('LLEN', key)
  for start = 0, n - 1, 200 do
    local page = redis.call('LRANGE', key, start, start + 199)
    for i = 1, #page do
      consider(page[i])
    end
  end
end
scan(KEYS[1])
local processing = redis.call('HKEYS', KEYS[3])
for p = 1, #processing do
  scan(processing[p])
end
if bestText then
  return {bestText, 0, 1}
end
local lastMs = redis.call('HGET', KEYS[2], 'last_ms')
if not lastMs then
  return {'', 0, 0}
end
return {lastMs .. '-' .. (tonumber(redis.call('HGET', KEYS[2], 'last_seq')) + 1), 0, 1}
