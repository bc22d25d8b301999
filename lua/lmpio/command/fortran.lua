-- Fortran sequential files for the lmpio command (dump --fortran,
-- convert --fortran): the record markers that frame the file, read on one
-- rank, and the options that fix a wrong guess of their byte order or size.

local common = require "lmpio.command.common"

local fail, error_text = common.fail, common.error_text
local fortran = {}

-- The string.pack format of a record marker: byte order and size.
local ORDERS = { little = "<", big = ">", native = "=" }
function fortran.marker_format(option, order, bytes)
  local o = ORDERS[order]
  if not o then fail("%s: '%s' is not a byte order (little, big or native)", option, order) end
  return o .. "i" .. bytes
end

-- What a marker format says in words: "big-endian 4-byte markers".
local function markers_name(fmt)
  local c = fmt:sub(1, 1)
  local big = c == ">" or (c == "=" and string.pack("=i2", 1) == "\0\1")
  return string.format("%s-endian %s-byte markers", big and "big" or "little", fmt:sub(3))
end

-- Reads the record markers of the Fortran sequential file fh (its view
-- the bytes as they are) on this rank alone.  Returns the records, a list
-- of {offset of the first marker, payload bytes}; or, when the markers of
-- format fmt do not frame the file (a marker cut short, running past the
-- end, negative or disagreeing with its partner), nil, the reason (naming
-- the record, from 1, and its offset) and the number of records before it.
-- An error of the reads themselves is an error.
local function read_records(fh, path, total, fmt)
  local mbytes = tonumber(fmt:sub(3))
  local BYTE = common.module().BYTE
  local function marker(at)
    local ok, b = pcall(fh.read_at, fh, at, mbytes, BYTE)
    if not ok then fail("%s: %s", path, error_text(b)) end
    return (string.unpack(fmt, b:tostring()))
  end
  local recs, pos = {}, 0
  while pos < total do
    local function bad(f, ...)
      return nil, string.format("record %d at offset %d: " .. f, #recs + 1, pos, ...), #recs
    end
    if total - pos < 2 * mbytes then return bad("%d bytes left, too few for two record markers", total - pos) end
    local len = marker(pos)
    if len < 0 then return bad("negative marker %d (a record split into subrecords is not supported)", len) end
    if len > total - pos - 2 * mbytes then
      return bad("its marker says %d bytes, past the end of the file (%d bytes)", len, total)
    end
    local tail = marker(pos + mbytes + len)
    if tail ~= len then return bad("the markers disagree (%d at the start, %d at the end)", len, tail) end
    recs[#recs + 1] = { pos, len }
    pos = pos + 2 * mbytes + len
  end
  return recs
end

-- The marker formats that frame the file (with one record or more), other
-- than fmt: those of the other byte order and of the other marker size, in
-- that order of preference; a list of {format, records}.
local function other_framings(fh, path, total, fmt)
  local found = {}
  local size = fmt:sub(3)
  local little = markers_name(fmt):find("little", 1, true)
  for _, f in ipairs({ (little and ">i" or "<i") .. size, "<i" .. (size == "4" and 8 or 4), ">i" .. (size == "4" and 8 or 4) }) do
    local recs = read_records(fh, path, total, f)
    if recs and #recs > 0 then found[#found + 1] = { f, recs } end
  end
  return found
end

-- The options that read the file with marker format f instead (order is
-- the option of the byte order: --from-markers, --markers).
local function framing_options(f, fmt, order)
  local opts = {}
  if markers_name(f):match("^%a+") ~= markers_name(fmt):match("^%a+") then
    opts[#opts + 1] = order .. " " .. markers_name(f):match("^%a+")
  end
  if f:sub(3) ~= fmt:sub(3) then opts[#opts + 1] = "--marker-size " .. f:sub(3) end
  return table.concat(opts, " ")
end

-- The message of markers of format fmt that do not frame the file: why,
-- and the options that fix it when another byte order or marker size
-- frames it (order: the option that gives the byte order).
local function framing_error(fh, path, total, fmt, reason, order)
  local other = other_framings(fh, path, total, fmt)[1]
  if other then
    return string.format("%s: %s, reading %s; %s frame the file: give %s", path, reason, markers_name(fmt),
                         markers_name(other[1]), framing_options(other[1], fmt, order))
  end
  return string.format("%s: %s (is it a Fortran sequential file with %s?)", path, reason, markers_name(fmt))
end

-- Rank 0 reads the record markers of the Fortran sequential file fh (its
-- view still the default bytes) and every rank gets the records, a list of
-- {offset of the first marker, payload bytes}, or the same error naming
-- the first record that is not framed (and the option that fixes it).
function fortran.records(world, fh, path, total, fmt, order)
  local packed, err = "", nil
  if world:rank() == 0 then
    local ok, e = pcall(function()
      local recs, reason = read_records(fh, path, total, fmt)
      if not recs then fail("%s", framing_error(fh, path, total, fmt, reason, order)) end
      local parts = {}
      for i, r in ipairs(recs) do parts[i] = string.pack("<i8i8", r[1], r[2]) end
      packed = table.concat(parts)
    end)
    if not ok then err = getmetatable(e) == common.Fail and e.msg or error_text(e) end
  end
  local msg = world:bcast(err or false)
  if msg then fail("%s", msg) end
  packed = world:bcast(packed)
  local recs = {}
  for i = 1, #packed // 16 do
    local at, len = string.unpack("<i8i8", packed, 16 * i - 15)
    recs[i] = { at, len }
  end
  return recs
end

fortran.markers_name = markers_name
fortran.read_records = read_records
fortran.framing_error = framing_error

return fortran
