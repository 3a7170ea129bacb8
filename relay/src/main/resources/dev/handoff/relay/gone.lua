-- Which of the given entry IDs a stream no longer holds, for the repair of entries a group still needs.
-- KEYS[1]: the stream. ARGV[1]: mode. ARGV[2]: with mode "needed", the threshold to use when the stream has no
-- consumer group (the shard's watermark or the retention cut). ARGV[3...]: entry IDs, as "ms-seq".
-- Modes:
--   "probe":  {exists, max-deleted-entry-id} (XDEL sets it to the highest ID it ever deleted; XTRIM leaves it).
--   "needed": {exists, threshold, absent...}: threshold is the lowest last-delivered ID over the groups (ARGV[2]
--             with no group); only IDs above it that the stream does not hold are returned. Read with the check in
--             one atomic step, so no trim can move the threshold past an ID between the two.
--   "any":    {exists, "", absent...}: every given ID the stream does not hold (pending entries' bodies).
-- exists is 0 when the stream does not exist: that is a lost stream, which the relay republishes by itself.
local function parse(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0, ''}
end
local mode = ARGV[1]
if mode == 'probe' then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for f = 1, #info, 2 do
    if info[f] == 'max-deleted-entry-id' then
      return {1, info[f + 1]}
    end
  end
  return {1, '0-0'}
end
local threshold = ''
if mode == 'needed' then
  local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
  if #groups == 0 then
    threshold = ARGV[2]
  else
    for g = 1, #groups do
      local info = groups[g]
      for f = 1, #info, 2 do
        if info[f] == 'last-delivered-id' and (threshold == '' or less(info[f + 1], threshold)) then
          threshold = info[f + 1]
        end
      end
    end
  end
end
local reply = {1, threshold}
for i = 3, #ARGV do
  local id = ARGV[i]
  if threshold == '' or less(threshold, id) then
    if #redis.call('XRANGE', KEYS[1], id, id) == 0 then
      reply[#reply + 1] = id
    end
  end
end
return reply
