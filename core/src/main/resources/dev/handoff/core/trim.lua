-- Trims a stream below what every consumer group has finished, reading the groups and trimming in one atomic step
-- so that no group moves in between.
-- KEYS[1]: the stream. ARGV[1]: the lowest ID to keep when the stream has no group (the retention cut).
-- ARGV[2]: the most entries to evict. ARGV[3] (optional): 'approx' (the default) trims whole stream nodes, at most
-- ARGV[2] entries; 'exact' trims every entry below minid (no LIMIT: callers run it after the approximate trims, when
-- what is left below minid is within one node); 'none' trims nothing and only reports (an operator's dry run).
-- ARGV[4] (optional, "" for none): the highest trim point allowed, the relay's trim margin: entries at or above it
-- stay even when every group finished them.
-- Reply: {minid, evicted, groups, holder, length}; minid is "" when the stream does not exist; holder is the group
-- whose unfinished entries set minid ("" with no group, "(trim margin)" when the margin did); length is the stream's
-- length after the trim.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'', 0, 0, '', 0}
end
local function parse(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
local minid = nil
local holder = ''
if #groups == 0 then
  minid = ARGV[1]
else
  for g = 1, #groups do
    local info = groups[g]
    local name, delivered
    for f = 1, #info, 2 do
      if info[f] == 'name' then name = info[f + 1] end
      if info[f] == 'last-delivered-id' then delivered = info[f + 1] end
    end
    local candidate = delivered
    local pending = redis.call('XPENDING', KEYS[1], name)
    if pending[1] > 0 and less(pending[2], candidate) then
      candidate = pending[2]
    end
    if minid == nil or less(candidate, minid) then
      minid = candidate
      holder = name
    end
  end
end
if ARGV[4] and ARGV[4] ~= '' and less(ARGV[4], minid) then
  minid = ARGV[4]
  holder = '(trim margin)'
end
local mode = ARGV[3] or 'approx'
local evicted = 0
if mode == 'approx' then
  evicted = redis.call('XTRIM', KEYS[1], 'MINID', '~', minid, 'LIMIT', tonumber(ARGV[2]))
elseif mode == 'exact' then
  evicted = redis.call('XTRIM', KEYS[1], 'MINID', '=', minid)
end
return {minid, evicted, #groups, holder, redis.call('XLEN', KEYS[1])}
