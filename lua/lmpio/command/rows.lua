-- The values the lmpio command prints (dump, dump --fortran): each
-- number in its format, and rows of them, `columns` values of a predefined
-- type a line or one element of a derived type a line (its items, under a
-- line of their names).

local common = require "lmpio.command.common"

local fail = common.fail
local rows = {}

-- The fewest digits of v that read back as the same value (as a float of
-- the given bytes: 4 or 8).
local function shortest(v, bytes)
  if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
  local lo, hi = bytes == 4 and 6 or 15, bytes == 4 and 9 or 17
  for digits = lo, hi do
    local s = string.format("%." .. digits .. "g", v)
    local back = tonumber(s)
    if bytes == 4 then
      if string.pack("f", back) == string.pack("f", v) then return s end
    elseif back == v then
      return s
    end
  end
  return string.format("%.17g", v)
end

function rows.formatter(fmt, mtype)
  local name = mtype:name()
  local float_bytes = (name == "FLOAT" or name == "REAL" or name == "REAL4") and 4
    or (name == "DOUBLE" or name == "REAL8" or name == "DOUBLE_PRECISION" or name == "LONG_DOUBLE") and 8
  if fmt then
    local ok, err = pcall(string.format, fmt, float_bytes and 1.5 or 1)
    if not ok then fail("--format: '%s': %s", fmt, (err:gsub("^bad argument #%d+ to 'format' ", ""))) end
    return function(v)
      if type(v) == "boolean" then return tostring(v) end
      local ok2, s = pcall(string.format, fmt, v)
      if not ok2 then fail("--format: '%s' cannot format %s", fmt, tostring(v)) end
      return s
    end
  end
  return function(v)
    if math.type(v) == "float" then return shortest(v, float_bytes or 8) end
    return tostring(v)
  end
end

-- The column names of the items of derived type t (runs: t:items()):
-- a record's field names (x[1], x[2], ... for an array field), else each
-- item's type and byte offset (DOUBLE@8).
function rows.column_names(t, runs)
  local byoff = {}
  local ok, recs = pcall(common.module().records, t, 0)
  if ok then
    for _, f in ipairs(recs:fields()) do
      local isize = f.type:size()
      for k = 1, f.count do
        byoff[f.offset + (k - 1) * isize] = f.count == 1 and f.name or string.format("%s[%d]", f.name, k)
      end
    end
  end
  local names = {}
  for _, run in ipairs(runs) do
    local isize = run.type:size()
    for k = 0, run.count - 1 do
      local off = run.offset + k * isize
      names[#names + 1] = byoff[off] or string.format("%s@%d", run.type:name(), off)
    end
  end
  return names
end

-- ---- the row writer ---------------------------------------------------------

local Writer = {}
Writer.__index = Writer

-- A writer of rows to out: values of a predefined type `columns` a line
-- (array), elements of a derived type one a line (elements).
function rows.writer(out, columns)
  return setmetatable({ out = out, columns = columns, line = {}, n = 0 }, Writer)
end

-- Ends the line of the values so far.
function Writer:newline()
  self.out:write(table.concat(self.line, " ", 1, self.n), "\n")
  self.n = 0
end

-- The first n values of array a, each through format f.
function Writer:array(a, n, f)
  local line, columns = self.line, self.columns
  for i = 1, n do
    local c = self.n + 1
    line[c] = f(a[i])
    self.n = c
    if c == columns then self:newline() end
  end
end

-- The line of the values written since the last one ended, if any: the
-- last line of values that did not fill it.
function Writer:finish()
  if self.n > 0 then self:newline() end
end

-- The n elements that bytes holds, each ext bytes from the last, a line
-- each: the items of runs (t:items() of their type), each item type's
-- values through formats[its name].
function Writer:elements(bytes, n, ext, runs, formats)
  local array, line = common.module().array, self.line
  for i = 0, n - 1 do
    local c = 0
    for _, run in ipairs(runs) do
      local from = i * ext + run.offset
      local vals = array(run.type, bytes:sub(from + 1, from + run.count * run.type:size()))
      local f = formats[run.type:name()]
      for k = 1, run.count do
        c = c + 1
        line[c] = f(vals[k])
      end
    end
    self.n = c
    self:newline()
  end
end

return rows
