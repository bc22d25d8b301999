-- lmpio dump: the values of a view of a file as text, a .npy's with its
-- shape, and the records of a Fortran sequential file (--fortran).

local common = require "lmpio.command.common"
local expression = require "lmpio.command.expression"
local fortran = require "lmpio.command.fortran"
local rows = require "lmpio.command.rows"

local fail, error_text, open, set_view = common.fail, common.error_text, common.open, common.set_view
local run_datarep_file, markers_name = common.run_datarep_file, fortran.markers_name
local datatype, integer, formatter = expression.datatype, expression.integer, rows.formatter

local usage = [[
usage: lmpio dump FILE [OPTIONS]

Prints the values that a view of FILE shows, one per line.

view:
  --disp N              displacement in bytes (default 0)
  --etype T             elementary type (default BYTE)
  --filetype EXPR       filetype (default: the etype), e.g. 'vector(4, 1, 8, DOUBLE)'
  --datarep REP         native (default), external32, internal or a registered name
  --datarep-file F.lua  a Lua file that registers representations
                        (lmpio.register_datarep); run before the view is set
values:
  --type T              predefined memory type of the values (default: the etype)
  --offset N            first etype of the view to print (default 0)
  --count N             number of etypes (default: to the end of the file)
  --format FMT          string.format format of each number (e.g. '%.17g',
                        '%08x'); default: integers in decimal, floating-point
                        numbers in the fewest digits that read back exactly
  --columns N           values per line (default 1), separated by spaces
  --no-header           no line of column names before rows (below), nor
                        a .npy file's shape

A derived --type (or etype), e.g. 'record{{"id", INT}, {"x", DOUBLE, 3}}',
prints one row per element: its items, under a line of column names (a
record's field names, x[1] x[2] x[3] for an array field; TYPE@OFFSET for
other items).  Through the default byte etype the elements are packed in
the file (each item at its size in the representation, no padding) and
--offset and --count count elements.

A .npy file (numpy's format: it starts with \x93NUMPY) is read through
its header when none of --disp, --etype and --datarep is given: the
values of the array in the file's order, after a line "# shape (3, 4),
DOUBLE, C order" (not with --no-header), --columns defaulting, for two
or more dimensions, to the one that varies fastest (the last in C order,
the first in Fortran order).

A complex number is printed as its two parts (its real and imaginary
parts, two columns by default).

Fortran sequential unformatted files:
  --fortran             FILE is records, each a length marker, the payload
                        and the marker again: prints a line of the markers'
                        byte order and size, then each record's number,
                        offset and marker, and its payload as elements of
                        --type (packed, as convert reads them; the bytes
                        left over said); the values are in --datarep, by
                        default external32 when the markers are big-endian
  --markers ORDER       byte order of the markers: little, big or native
                        (default: the order, and size, that frame the file)
  --marker-size N       bytes of a marker: 4 or 8 (default: detected)
  --header-type T       the type of the first record's elements
A file that the markers do not frame (a marker past the end, cut short or
disagreeing with its partner) is an error naming the record and its offset,
and the option that reads the file when another byte order frames it.

Under mpirun, rank 0 prints and the other ranks do nothing.
]]

-- A .npy's shape as numpy prints it: (3, 4), (5,), ().
local function npy_shape(shape)
  local dims = {}
  for i, d in ipairs(shape) do dims[i] = tostring(d) end
  return "(" .. table.concat(dims, ", ") .. (#dims == 1 and ",)" or ")")
end

-- A complex type's values are printed as their two parts: the
-- floating-point type of half its size (nil for other types).
local function complex_part(t)
  if not t:is_predefined() or not (t:name() or ""):find("COMPLEX") then return nil end
  local lmpio = common.module()
  return ({ [8] = lmpio.FLOAT, [16] = lmpio.DOUBLE, [32] = lmpio.LONG_DOUBLE })[t:size()]
end

local dump_rows, dump_fortran -- below

-- Elements of a derived memory type, one row each: its items in typemap
-- order, under a line of column names.  Through a byte etype the offset
-- and count count elements, each taking its items' file sizes (packed);
-- otherwise etypes, as for predefined types.
local function dump_rows(o, path, disp, etype, filetype, mtype, offset, count)
  local lmpio = common.module()
  if o.columns then fail("--columns: a derived type prints one row per element (its items are the columns)") end
  local esize, msize = etype:size(), mtype:size()
  if esize == 0 then fail("--etype: %s has no data", o.etype or "BYTE") end
  if msize == 0 then fail("--type: %s has no data", o.type or o.etype) end
  if esize ~= 1 and esize % msize ~= 0 then
    fail("the etype (%d bytes) is not a whole number of --type %s (%d bytes)", esize, o.type or o.etype, msize)
  end
  local runs = mtype:items()
  for _, run in ipairs(runs) do
    if not pcall(lmpio.array, run.type, 0) then fail("--type: items of %s cannot be printed", run.type:name()) end
  end
  local formats = {}
  for _, run in ipairs(runs) do
    local name = run.type:name()
    formats[name] = formats[name] or formatter(o.format, run.type)
  end
  run_datarep_file(o["datarep-file"])
  local fh <close> = open(lmpio.self, path, "r")
  set_view(fh, path, disp, etype, filetype, o.datarep or "native")
  -- etypes per element: through bytes, the element's packed size
  local per
  if esize == 1 then
    per = 0
    for _, run in ipairs(runs) do
      local ok, e = pcall(fh.get_type_extent, fh, run.type)
      if not ok then fail("%s: %s", path, error_text(e)) end
      per = per + run.count * e
    end
  end
  local out = io.stdout
  out:setvbuf("full")
  if not o["no-header"] then out:write(table.concat(rows.column_names(mtype, runs), " "), "\n") end
  local mext = mtype:extent()
  local epe = per and 1 or esize // msize -- elements per unit of offset and count
  local chunk = math.max(1, 65536 // math.max(mext * epe, 1))
  local buf = lmpio.buffer(chunk * epe * mext)
  local at, left = offset, count or math.huge
  local w = rows.writer(out)
  while left > 0 do
    local want = math.min(chunk, left)
    local ok, a, n
    if per then -- etype bytes: offsets in bytes, count in elements
      ok, a, n = pcall(fh.read_at, fh, at * per, buf, want, mtype)
    else
      ok, a, n = pcall(fh.read_at, fh, at, buf, want * epe, mtype)
    end
    if not ok then fail("%s: %s", path, error_text(a)) end
    w:elements(buf:tostring(1, n * mext), n, mext, runs, formats)
    if n < want * epe then break end
    at, left = at + want, left - want
  end
  out:flush()
end

-- dump --fortran: every record of a Fortran sequential file, a line saying
-- its number, offset and marker, then its payload's values as elements of
-- --type (the first record's of --header-type when given), packed as in
-- convert.  The markers are read in the order --markers gives, else in the
-- order and size (4 or 8 bytes) that frames the whole file.
local function dump_fortran(o, path)
  local lmpio = common.module()
  for _, k in ipairs({ "disp", "filetype", "offset", "count" }) do
    if o[k] then fail("dump --fortran: --%s does not apply (the markers frame the whole file)", k) end
  end
  local env = expression.sandbox()
  local t = datatype(o.type and "--type" or "--etype", o.type or o.etype or "BYTE", env)
  local ht = o["header-type"] and datatype("--header-type", o["header-type"], env)
  local columns = integer("--columns", o.columns or "1", env, 1)
  local sizes = { 4, 8 }
  if o["marker-size"] then
    sizes = { integer("--marker-size", o["marker-size"], env, 0) }
    if sizes[1] ~= 4 and sizes[1] ~= 8 then fail("--marker-size: %d bytes (4 or 8)", sizes[1]) end
  end
  run_datarep_file(o["datarep-file"])
  local fh <close> = open(lmpio.self, path, "r")
  local total = fh:get_size()
  -- the markers: as given, else the first format (native order first)
  -- that frames the file; a file no format frames is an error that gives
  -- the reason of the format that read the most records
  local recs, fmt, how
  if o.markers then
    fmt = fortran.marker_format("--markers", o.markers, sizes[1])
    local reason
    recs, reason = fortran.read_records(fh, path, total, fmt)
    if not recs then fail("%s", fortran.framing_error(fh, path, total, fmt, reason, "--markers")) end
    how = "--markers " .. o.markers
  else
    local best = { n = -1 }
    local native = string.pack("=i2", 1) == "\1\0" and { "<", ">" } or { ">", "<" }
    for _, size in ipairs(sizes) do
      for _, order in ipairs(native) do
        local f = order .. "i" .. size
        local r, reason, n = fortran.read_records(fh, path, total, f)
        if r then recs, fmt = r, f break end
        if n > best.n then best = { n = n, reason = reason, fmt = f } end
      end
      if recs then break end
    end
    if not recs then
      fail("%s: the record markers do not frame the file (is it a Fortran sequential file?): reading %s, %s; no other byte order or marker size frames it",
           path, markers_name(best.fmt), best.reason)
    end
    how = "detected"
  end
  -- the values in the markers' byte order unless --datarep says otherwise
  local rep = o.datarep or (markers_name(fmt):find("^big") and string.pack("=i2", 1) == "\1\0" and "external32")
              or "native"
  set_view(fh, path, 0, lmpio.BYTE, lmpio.BYTE, rep)
  local out = io.stdout
  out:setvbuf("full")
  out:write(string.format("%d record%s, %s (%s), values in %s\n", #recs, #recs == 1 and "" or "s",
                          markers_name(fmt), how, rep))
  local mbytes = tonumber(fmt:sub(3))
  local kinds = {} -- per type: its packed size, its items, their formats
  local function kind(tt, what)
    if kinds[tt] then return kinds[tt] end
    local k = { size = common.packed_size(fh, path, tt), ext = tt:extent(), items = tt:items(), formats = {},
                predefined = tt:is_predefined() }
    if k.size == 0 then fail("%s: %s has no data", what, tt:name()) end
    if not k.predefined and o.columns then
      fail("--columns: a derived type prints one row per element (its items are the columns)")
    end
    for _, run in ipairs(k.items) do
      if not pcall(lmpio.array, run.type, 0) then fail("%s: items of %s cannot be printed", what, run.type:name()) end
      local name = run.type:name()
      k.formats[name] = k.formats[name] or formatter(o.format, run.type)
    end
    k.names = not k.predefined and not o["no-header"] and table.concat(rows.column_names(tt, k.items), " ")
    k.chunk = math.max(1, 65536 // math.max(k.ext, k.size)) -- elements per read
    k.buf = not k.predefined and lmpio.buffer(k.chunk * k.ext)
    kinds[tt] = k
    return k
  end
  local w = rows.writer(out, columns)
  for r, rec in ipairs(recs) do
    local at, len = rec[1], rec[2]
    out:write(string.format("record %d at offset %d: marker %d\n", r, at, len))
    local tt = (r == 1 and ht) or t
    local texpr = (r == 1 and ht) and o["header-type"] or o.type or o.etype or "BYTE"
    local k = kind(tt, (r == 1 and ht) and "--header-type" or (o.type and "--type" or "--etype"))
    local n = len // k.size
    if k.names and n > 0 then out:write(k.names, "\n") end
    local done = 0
    while done < n do
      local m = math.min(k.chunk, n - done)
      local ok, a, got = pcall(fh.read_at, fh, at + mbytes + done * k.size, k.buf or m, k.buf and m or tt, k.buf and tt)
      if not ok then fail("%s: record %d: %s", path, r, error_text(a)) end
      if got < m then fail("%s: record %d: a read returned fewer elements than the markers promised (did the file change?)", path, r) end
      if k.predefined then
        w:array(a, m, k.formats[tt:name()])
      else
        w:elements(a:tostring(1, m * k.ext), m, k.ext, k.items, k.formats)
      end
      done = done + m
    end
    w:finish()
    if len % k.size ~= 0 then
      out:write(string.format("(%d bytes left over: not a whole %s of %d bytes)\n", len % k.size, texpr, k.size))
    end
  end
  out:flush()
end

local function dump(argv)
  local pos, o = common.parse(argv, 2, {
    disp = true, etype = true, filetype = true, datarep = true, ["datarep-file"] = true,
    type = true, offset = true, count = true, format = true, columns = true, help = false,
    ["no-header"] = false,
    fortran = false, markers = true, ["marker-size"] = true, ["header-type"] = true, -- Fortran records
  }, "dump")
  if o.help then return io.stdout:write(usage) end
  common.check_positional(pos, 1, "dump", "one FILE")
  local path = pos[1]
  for _, k in ipairs(o.fortran and {} or { "markers", "marker-size", "header-type" }) do
    if o[k] then fail("dump: --%s is for Fortran files (--fortran)", k) end
  end
  local lmpio = common.module()
  if lmpio.world:rank() ~= 0 then return end
  if o.fortran then return dump_fortran(o, path) end
  local env = expression.sandbox()
  -- a .npy: the view and the count from its header
  local npy = not (o.disp or o.etype or o.datarep) and common.is_npy(path) and select(2, common.npy_open(lmpio.self, path, "r"))
  local disp = npy and npy.offset or integer("--disp", o.disp or "0", env, 0)
  local etype = npy and npy.type or datatype("--etype", o.etype or "BYTE", env)
  local filetype = o.filetype and datatype("--filetype", o.filetype, env) or etype
  local parts = complex_part(etype) -- (a complex number as its two parts)
  local mtype = o.type and datatype("--type", o.type, env) or parts or etype
  if mtype:is_predefined() and not pcall(function() return lmpio.array(mtype, 1)[1] end) then
    local part = complex_part(mtype)
    fail("%s: values of %s cannot be printed as numbers (%s)", o.type and "--type" or "--etype", mtype:name(),
         part and "its two parts can: --type " .. part:name() or "give --type, e.g. --type BYTE")
  end
  local offset = integer("--offset", o.offset or "0", env, 0)
  local count = o.count and integer("--count", o.count, env, 0)
  local fastest = parts and 2 or 1
  if npy then
    local n = 1
    for _, d in ipairs(npy.shape) do n = n * d end
    count = count or math.max(0, n - offset)
    if #npy.shape >= 2 then -- a row of a matrix a line (of a vector, a value)
      fastest = math.max(1, npy.shape[npy.order == "F" and 1 or #npy.shape]) * (parts and 2 or 1)
    end
    o.datarep = npy.datarep
    if not o["no-header"] then
      io.stdout:write(string.format("# shape %s, %s, %s order\n", npy_shape(npy.shape), etype:name(), npy.order))
    end
  end
  local columns = integer("--columns", o.columns or tostring(fastest), env, 1)
  if not mtype:is_predefined() then
    return dump_rows(o, path, disp, etype, filetype, mtype, offset, count)
  end
  local esize, msize = etype:size(), mtype:size()
  if esize == 0 then fail("--etype: %s has no data", o.etype or "BYTE") end
  if esize % msize ~= 0 then
    fail("the etype (%d bytes) is not a whole number of --type %s (%d bytes)", esize, mtype:name(), msize)
  end
  local per = esize // msize -- values per etype
  local format = formatter(o.format, mtype)
  run_datarep_file(o["datarep-file"])

  local fh <close> = open(lmpio.self, path, "r")
  set_view(fh, path, disp, etype, filetype, o.datarep or "native")
  local chunk = math.max(1, 65536 // per) -- etypes per read
  local out = io.stdout
  out:setvbuf("full")
  local w = rows.writer(out, columns)
  local at, left = offset, count or math.huge
  while left > 0 do
    local want = math.min(chunk, left)
    local ok, a, n = pcall(fh.read_at, fh, at, want * per, mtype)
    if not ok then fail("%s: %s", path, error_text(a)) end
    w:array(a, n, format)
    if n < want * per then break end
    at, left = at + want, left - want
  end
  w:finish()
  out:flush()
end

return { dump = { usage = usage, main = dump } }
