-- Checks a rewind of one group on one stream and, when asked, applies it, in one atomic step: a trim between the
-- check and the XGROUP SETID could otherwise remove what the group was set back to read.
-- KEYS[1]: the stream. ARGV[1]: the group. ARGV[2]: the target; entries at or after it come again.
-- ARGV[3]: the ID to set (the target's predecessor). ARGV[4]: the most entries to count. ARGV[5]: '1' to apply.
-- Reply: {status, last-delivered, oldest retained ("" if none), come again, exact (1/0), entries-read set (-1 if
-- none), pending, entries-read before (-1 if unknown)}; status is ok, behind (the group has not read up to the
-- target: left as it is), below (entries at or after the target were removed), no-stream or no-group.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'no-stream', '', '', 0, 1, -1, 0, -1}
end
local function field(list, name)
  for i = 1, #list, 2 do
    if list[i] == name then return list[i + 1] end
  end
  return nil
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
local group = nil
for _, info in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  if field(info, 'name') == ARGV[1] then group = info end
end
if group == nil then
  return {'no-group', '', '', 0, 1, -1, 0, -1}
end
local delivered = field(group, 'last-delivered-id')
local pending = field(group, 'pending')
local readBefore = field(group, 'entries-read')
if not readBefore then readBefore = -1 end
local stream = redis.call('XINFO', 'STREAM', KEYS[1])
local length = field(stream, 'length')
local added = field(stream, 'entries-added')
local deleted = field(stream, 'max-deleted-entry-id')
local first = field(stream, 'first-entry')
local floor
if first then
  floor = first[1]
else
  local ms, seq = parse(field(stream, 'last-generated-id'))
  floor = string.format('%d-%d', ms, seq + 1)
end
local oldest = first and first[1] or ''
-- Entries removed below the oldest retained one: exact when no XDEL reached at or above it (XTRIM leaves
-- max-deleted-entry-id alone), unknown otherwise, and unknown counts as removed.
local removedBelow = -1
if deleted == '0-0' or less(deleted, floor) then removedBelow = added - length end
-- A group that has not read up to the target reads all of it anyway: nothing to set back, nothing to refuse.
if less(delivered, ARGV[2]) then
  return {'behind', delivered, oldest, 0, 1, -1, pending, readBefore}
end
if less(ARGV[2], floor) and removedBelow ~= 0 then
  return {'below', delivered, oldest, 0, 1, -1, pending, readBefore}
end
local limit = tonumber(ARGV[4])
local function count(from, to, most)
  local n = 0
  local cursor = from
  while n < most do
    local want = math.min(500, most - n)
    local page = redis.call('XRANGE', KEYS[1], cursor, to, 'COUNT', want)
    n = n + #page
    if #page < want then return n, true end
    cursor = '(' .. page[#page][1]
  end
  return n, #redis.call('XRANGE', KEYS[1], cursor, to, 'COUNT', 1) == 0
end
local again, againExact = count(ARGV[2], delivered, limit)
local set = -1
if againExact then
  local backlog, backlogExact = count('(' .. delivered, '+', limit)
  -- lag = entries-added - entries-read: set so that the group's lag is what it will read from the new position.
  if backlogExact then set = added - again - backlog end
end
if ARGV[5] == '1' then
  if set >= 0 then
    redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[3], 'ENTRIESREAD', string.format('%d', set))
  else
    redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[3])
  end
end
return {'ok', delivered, oldest, again, againExact and 1 or 0, set, pending, readBefore}
