-- The one reader of a list element's header in Lua, put before every list script (ListScripts): the header is
-- "hl1 <ms>-<seq> <message_id>\n" within the first 128 bytes (docs/wire-format.md), checked exactly as
-- ListFormat.header checks it in Java, with plain finds and byte checks rather than a pattern per script.
-- Returns the ID as text, the message ID, ms and seq; nil when the element has no version-1 header.
local function all_bytes(s, ok)
  if #s == 0 then return false end
  for i = 1, #s do
    if not ok(string.byte(s, i)) then return false end
  end
  return true
end
local function is_digit(b) return b >= 48 and b <= 57 end
local function is_hex_or_dash(b)
  return is_digit(b) or b == 45 or (b >= 65 and b <= 70) or (b >= 97 and b <= 102)
end
local function element_header(e)
  if string.sub(e, 1, 4) ~= 'hl1 ' then return nil end
  local nl = string.find(e, '\n', 1, true)
  if not nl or nl > 128 then return nil end
  local line = string.sub(e, 5, nl - 1)
  local space = string.find(line, ' ', 1, true)
  if not space then return nil end
  local id, message_id = string.sub(line, 1, space - 1), string.sub(line, space + 1)
  local dash = string.find(id, '-', 1, true)
  if not dash then return nil end
  local ms, seq = string.sub(id, 1, dash - 1), string.sub(id, dash + 1)
  if not all_bytes(ms, is_digit) or not all_bytes(seq, is_digit) then return nil end
  if #message_id ~= 36 or not all_bytes(message_id, is_hex_or_dash) then return nil end
  return id, message_id, tonumber(ms), tonumber(seq)
end
