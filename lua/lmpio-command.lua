#!/usr/bin/env lua5.4
-- lmpio: look at and convert binary files through MPI-IO views.
--
--   lmpio dump FILE [options]        values of a view, as text
--   lmpio convert IN OUT [options]   rewrite IN in another representation
--                                    (in parallel under mpirun)
--   lmpio map [options]              which rank owns which bytes of a view
--   lmpio run [mpirun options] PROGRAM [ARGS]
--                                    mpirun with rank 0's standard input and
--                                    output passed exactly (pipelines)
--
-- `lmpio COMMAND --help` says more.  Datatypes are given as small
-- expressions over the constructors of lmpio.type and the predefined types:
-- `vector(4, 1, 8, DOUBLE)`, `subarray({8, 8}, {4, 4}, {0, 4}, DOUBLE)`.
-- Errors print one line on standard error and exit with status 1.

local usage = {}

usage.main = [[
usage: lmpio COMMAND [ARGS] [OPTIONS]

Looks at and converts binary files through MPI-IO views.

commands:
  dump FILE        print the values of a view of FILE as text
  convert IN OUT   rewrite IN in another data representation (in parallel
                   under mpirun: each rank converts its block of elements)
  map              draw which rank owns which bytes of a view
  run [MPIRUN OPTIONS] PROGRAM [ARGS]
                   mpirun in a pipeline: standard input and output passed
                   to and from rank 0 exactly
  dropin-path      print the path of liblmpio-mpi.so, the drop-in library
                   (LD_PRELOAD=$(lmpio dropin-path))
  doc-path         print the path of the HTML reference's index.html

`lmpio COMMAND --help` describes a command's options.  Datatypes are
expressions over the constructors of lmpio.type and the predefined types,
e.g. `vector(4, 1, 8, DOUBLE)`, `subarray({8,8}, {4,4}, {0,4}, DOUBLE)`,
`contiguous(3, INT)`, `resized(INT, 0, 16)`.  An expression sees nothing
else; a command's expressions may take ten million steps in all, and one
of them 256 MB of memory.
]]

usage.dump = [[
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

usage.convert = [[
usage: lmpio convert IN OUT [OPTIONS]

Rewrites IN, a sequence of elements in one data representation, as OUT in
another.  Under `mpirun -n K` each rank converts its block of the elements;
OUT is the same whatever K.  In a file an element is its items one after
the other, each at its size in that file's representation: the padding of
a C struct in memory is not in the file (a record of an INT and 1000
DOUBLEs is 8004 bytes in the file, 8008 in memory).

  --type T              the element type, a datatype expression: DOUBLE,
                        'contiguous(3, INT)', 'struct({1,1}, {0,8}, {DOUBLE, INT})',
                        'record{{"id", INT}, {"x", DOUBLE, 3}}' (named fields)
  --etype T             the same as --type
  --from REP            representation of IN: native (default), external32,
                        internal or a registered name
  --to REP              representation of OUT (default native)
  --disp N              a header of N bytes, copied as it is (default 0)
  --header-type T       a header of one element of T, converted like the
                        elements (instead of --disp)
  --datarep-file F.lua  a Lua file that registers representations
                        (lmpio.register_datarep); run on every rank first
.npy files (numpy's format):
  --from npy            IN is a .npy file: the element type, the shape and
                        the representation are its header's (--type, if
                        given, must be its type).  The default for an IN
                        that starts with \x93NUMPY, unless --from is given
  --to npy              OUT is a .npy file (native representation) of IN's
                        elements in the order they are, with the shape and
                        order of IN's header, or else these:
  --shape DIMS          OUT's shape, e.g. '{1000, 3}' (default {N}: all
                        the elements)
  --order C|F           what OUT's header says of the order (default C:
                        the last index varies fastest)
Fortran sequential unformatted files:
  --fortran             IN and OUT are records, each a length marker, the
                        payload and the same marker again; a payload is a
                        whole number of elements (the first record's: of
                        --header-type when given).  The markers are
                        rewritten for OUT's payload sizes
  --markers ORDER       byte order of the markers of IN and OUT: little, big
                        or native (default: big with external32 and
                        internal, native otherwise)
  --from-markers ORDER  of IN's markers only
  --to-markers ORDER    of OUT's markers only
  --marker-size N       bytes of a marker: 4 (default) or 8

The size of IN after the header must be a whole number of elements.  A
Fortran record whose markers disagree, run past the end of IN or are cut
short is an error naming the record (from 1) and its offset, and the
options that read IN when markers of another byte order or size frame it
(e.g. --from-markers big).
]]

usage.run = [[
usage: lmpio run [MPIRUN OPTIONS] PROGRAM [ARGS]

Runs `mpirun [MPIRUN OPTIONS] PROGRAM [ARGS]` with its standard input and
output passed between the shell and rank 0 by lmpio run itself, through
two FIFOs that rank 0 takes as its standard input and output (mpirun's
own forwarding of standard input is off).  In a pipeline:

  cat input | lmpio run -n 4 lua5.4 filter.lua | sort
  lmpio run -n 4 lua5.4 filter.lua < input > output

Everything rank 0 writes to its standard output (lmpio.stdout, "-",
"/dev/stdout", print, io.write, printf) is the output, in the order rank 0
writes it; what the other ranks print goes to standard error.  Rank 0's
standard input is the input.  The exit status is mpirun's.  More ranks
than cores are allowed (as --oversubscribe; --nooversubscribe refuses).
Rank 0 must run on this machine.  Lua programs find the module that lmpio
itself uses (LUA_PATH_5_4 and LUA_CPATH_5_4 are set to its search paths:
the rock's tree, or build/lua for build/bin/lmpio).  MPIRUN (environment) names the launcher
(default mpirun); one that is not Open MPI 1 to 4 runs as it is, with its
own forwarding.
]]

usage.map = [[
usage: lmpio map [OPTIONS]

Draws which rank owns which bytes of a file when every rank sets a view:
one character per byte, the owning rank's digit (0-9, then a-z, A-Z),
'.' for no rank, '!' for more than one.  No MPI job is needed: one process
computes every rank's view from the datatypes' typemaps (native extents).

  --ranks N             number of ranks (default 4)
  --disp EXPR           displacement in bytes (default 0)
  --etype T             elementary type (default BYTE)
  --filetype EXPR       filetype (default: the etype)
                        The expressions may use `rank` and `size`, e.g.
                        --disp 'rank*4' --filetype 'resized(INT, 0, size*4)'
  --bytes N             file bytes to draw (default: two filetype extents
                        past the largest displacement, at most 4096)
  --width N             bytes per row (default 64)
  --svg FILE            write an SVG picture (one box per block of a rank,
                        and a legend) instead of drawing in the terminal

The work follows the drawing, not the number of items a view repeats: at
most 1048576 bytes, 4096 ranks, 16777216 bytes times ranks, 1000000 blocks
in an item of a filetype and 65536 boxes in an SVG, else an error.
]]

-- ---- errors -----------------------------------------------------------------

-- An error the user caused: reported as one line, without a traceback.
local Fail = {}
Fail.__index = Fail
Fail.__tostring = function(e) return e.msg end

local function fail(fmt, ...)
  error(setmetatable({ msg = string.format(fmt, ...) }, Fail), 0)
end

-- ---- options ----------------------------------------------------------------

-- Splits argv into positional arguments and options, checked against spec
-- (option name -> true when it takes a value, false for a flag).
local function parse(argv, first, spec, command)
  local pos, opts = {}, {}
  local i = first
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      table.move(argv, i + 1, #argv, #pos + 1, pos)
      break
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      local takes = spec[name]
      if takes == nil then
        fail("%s: unknown option '--%s' (see 'lmpio %s --help')", command, name, command)
      end
      if takes and not value then
        i = i + 1
        value = argv[i]
        if value == nil then fail("%s: option '--%s' needs a value", command, name) end
      elseif not takes and value then
        fail("%s: option '--%s' takes no value", command, name)
      end
      opts[name] = takes and value or true
    elseif a == "-h" then
      opts.help = true
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return pos, opts
end

local function check_positional(pos, n, command, what)
  if #pos ~= n then
    fail("%s: expected %s, got %d argument%s (see 'lmpio %s --help')", command, what, #pos,
         #pos == 1 and "" or "s", command)
  end
end

-- ---- the module and datatype expressions -------------------------------------

local lmpio -- loaded on first use: --help needs no MPI

local function module()
  if not lmpio then
    local ok, m = pcall(require, "lmpio")
    if not ok then fail("cannot load the lmpio module: %s", tostring(m)) end
    lmpio = m
  end
  return lmpio
end

local function is_datatype(v)
  return type(v) == "userdata" and getmetatable(v) == getmetatable(lmpio.INT)
end

-- The environment of an expression: the constructors of lmpio.type and the
-- predefined types by name, plus the given extra names (rank, size).
local function sandbox(extra)
  local env = {}
  for name, f in pairs(lmpio.type) do env[name] = f end
  for name, v in pairs(lmpio) do
    if is_datatype(v) then env[name] = v end
  end
  env.ORDER_C, env.ORDER_FORTRAN = lmpio.ORDER_C, lmpio.ORDER_FORTRAN
  env.record = lmpio.recordtype -- record{{"id", INT}, {"x", DOUBLE, 3}}: named fields
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

-- What evaluating the expressions of one command may take: VM steps in
-- all (an expression is a few dozen; this is seconds of work) and Lua memory
-- that one expression may add, in KiB.
local STEPS = 10000000
local MEMORY = 256 * 1024
local steps_left = STEPS

-- Runs chunk under those bounds, with the string methods out of reach
-- (("x"):rep(2^40) would not be a VM step).  Every step is counted and
-- every step's memory checked: one step can at most multiply what a string
-- holds by its number of operands.  The hook is the coroutine's own: the
-- module's hook on the main thread stays.
local function bounded(what, chunk)
  local base = collectgarbage("count")
  local co = coroutine.create(chunk)
  debug.sethook(co, function()
    steps_left = steps_left - 1
    if steps_left < 0 then
      error(setmetatable({ msg = string.format("%s: evaluation stopped after %d steps (an endless loop?)", what, STEPS) }, Fail), 0)
    end
    if collectgarbage("count") - base > MEMORY then
      error(setmetatable({ msg = string.format("%s: evaluation stopped: the expression uses more than %d MB of memory",
                                               what, MEMORY // 1024) }, Fail), 0)
    end
  end, "", 1)
  local smt = getmetatable("")
  local sindex = smt.__index
  smt.__index = nil
  local ok, v = coroutine.resume(co)
  smt.__index = sindex
  if ok and coroutine.status(co) ~= "dead" then return false, "the expression yielded" end
  return ok, v
end

-- Evaluates the expression of option `what` in env.
local function evaluate(what, expr, env)
  local chunk, err = load("return " .. expr, "=" .. what, "t", env)
  if not chunk then
    fail("%s: cannot read the expression '%s': %s", what, expr, (err:gsub("^" .. what:gsub("%p", "%%%0") .. ":%d+: ", "")))
  end
  local ok, v = bounded(what, chunk)
  if not ok and getmetatable(v) == Fail then error(v, 0) end
  if not ok then
    local msg = type(v) == "string" and v:gsub("^" .. what:gsub("%p", "%%%0") .. ":%d+: ", "") or tostring(v)
    fail("%s: '%s': %s", what, expr, msg)
  end
  return v
end

local function datatype(what, expr, env)
  local v = evaluate(what, expr, env)
  if not is_datatype(v) then
    fail("%s: '%s' is %s, not a datatype (types: DOUBLE, INT, BYTE, ...; constructors: vector, subarray, ...)",
         what, expr, v == nil and "nothing known" or "a " .. type(v))
  end
  return v
end

local function integer(what, expr, env, min)
  local v = evaluate(what, expr, env or {})
  if math.type(v) ~= "integer" and not (math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2^53) then
    fail("%s: '%s' is not an integer", what, expr)
  end
  v = math.tointeger(v)
  if min and v < min then fail("%s: %d is less than %d", what, v, min) end
  return v
end

-- The text of an error: an lmpio error object's message (without the
-- script position its tostring starts with), or the error's string.
local function error_text(e)
  if lmpio and lmpio.iserror(e) and e.message then return e.message end
  if type(e) == "table" or type(e) == "userdata" then
    local ok, s = pcall(tostring, e)
    if ok then return s end
  end
  return tostring(e)
end

local function run_datarep_file(path)
  if not path then return end
  local chunk, err = loadfile(path, "t")
  if not chunk then fail("--datarep-file: %s", err) end
  local ok, e = pcall(chunk, lmpio)
  if not ok then fail("--datarep-file %s: %s", path, error_text(e)) end
end

-- Opens path on comm, naming the file in the error.
local function open(comm, path, mode)
  local ok, fh = pcall(lmpio.open, comm, path, mode)
  if not ok then
    local msg = error_text(fh)
    if msg:find(path, 1, true) then fail("%s", msg) end
    fail("%s: %s", path, msg)
  end
  return fh
end

local function set_view(fh, path, disp, etype, filetype, rep)
  local ok, e = pcall(fh.set_view, fh, disp, etype, filetype, rep)
  if not ok then fail("%s: cannot set the view: %s", path, error_text(e)) end
end

-- .npy files (numpy's format): whether path starts with its magic, and
-- lmpio.npy.open naming the file in the error.
local function is_npy(path)
  local f = io.open(path, "rb")
  if not f then return false end
  local magic = f:read(6)
  f:close()
  return magic == "\x93NUMPY"
end

local function npy_open(comm, path, mode, desc)
  local ok, fh, d = pcall(lmpio.npy.open, comm, path, mode, desc)
  if not ok then
    local msg = error_text(fh)
    if msg:find(path, 1, true) then fail("%s", msg) end
    fail("%s: %s", path, msg)
  end
  return fh, d
end

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
  return ({ [8] = lmpio.FLOAT, [16] = lmpio.DOUBLE, [32] = lmpio.LONG_DOUBLE })[t:size()]
end

local dump_rows, dump_fortran -- below

-- ---- dump -------------------------------------------------------------------

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

local function formatter(fmt, mtype)
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
local function column_names(t, runs)
  local byoff = {}
  local ok, recs = pcall(lmpio.records, t, 0)
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

-- Elements of a derived memory type, one row each: its items in typemap
-- order, under a line of column names.  Through a byte etype the offset
-- and count count elements, each taking its items' file sizes (packed);
-- otherwise etypes, as for predefined types.
dump_rows = function(o, path, disp, etype, filetype, mtype, offset, count)
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
  if not o["no-header"] then out:write(table.concat(column_names(mtype, runs), " "), "\n") end
  local mext = mtype:extent()
  local epe = per and 1 or esize // msize -- elements per unit of offset and count
  local chunk = math.max(1, 65536 // math.max(mext * epe, 1))
  local buf = lmpio.buffer(chunk * epe * mext)
  local at, left = offset, count or math.huge
  local row = {}
  while left > 0 do
    local want = math.min(chunk, left)
    local ok, a, n
    if per then -- etype bytes: offsets in bytes, count in elements
      ok, a, n = pcall(fh.read_at, fh, at * per, buf, want, mtype)
    else
      ok, a, n = pcall(fh.read_at, fh, at, buf, want * epe, mtype)
    end
    if not ok then fail("%s: %s", path, error_text(a)) end
    local bytes = buf:tostring(1, n * mext)
    for i = 0, n - 1 do
      local c = 0
      for _, run in ipairs(runs) do
        local isize = run.type:size()
        local from = i * mext + run.offset
        local vals = lmpio.array(run.type, bytes:sub(from + 1, from + run.count * isize))
        local f = formats[run.type:name()]
        for k = 1, run.count do
          c = c + 1
          row[c] = f(vals[k])
        end
      end
      out:write(table.concat(row, " ", 1, c), "\n")
    end
    if n < want * epe then break end
    at, left = at + want, left - want
  end
  out:flush()
end

local function dump(argv)
  local pos, o = parse(argv, 2, {
    disp = true, etype = true, filetype = true, datarep = true, ["datarep-file"] = true,
    type = true, offset = true, count = true, format = true, columns = true, help = false,
    ["no-header"] = false,
    fortran = false, markers = true, ["marker-size"] = true, ["header-type"] = true, -- Fortran records
  }, "dump")
  if o.help then return io.stdout:write(usage.dump) end
  check_positional(pos, 1, "dump", "one FILE")
  local path = pos[1]
  for _, k in ipairs(o.fortran and {} or { "markers", "marker-size", "header-type" }) do
    if o[k] then fail("dump: --%s is for Fortran files (--fortran)", k) end
  end
  module()
  if lmpio.world:rank() ~= 0 then return end
  if o.fortran then return dump_fortran(o, path) end
  local env = sandbox()
  -- a .npy: the view and the count from its header
  local npy = not (o.disp or o.etype or o.datarep) and is_npy(path) and select(2, npy_open(lmpio.self, path, "r"))
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
  local column, line = 0, {}
  local at, left = offset, count or math.huge
  while left > 0 do
    local want = math.min(chunk, left)
    local ok, a, n = pcall(fh.read_at, fh, at, want * per, mtype)
    if not ok then fail("%s: %s", path, error_text(a)) end
    for i = 1, n do
      column = column + 1
      line[column] = format(a[i])
      if column == columns then
        out:write(table.concat(line, " ", 1, column), "\n")
        column = 0
      end
    end
    if n < want * per then break end
    at, left = at + want, left - want
  end
  if column > 0 then out:write(table.concat(line, " ", 1, column), "\n") end
  out:flush()
end

-- ---- convert ----------------------------------------------------------------

-- Bytes that one element of t takes in the file of fh, whose view is a
-- byte view in its representation: its items one after the other, each at
-- its file extent (no padding, no holes: the view's data stream).
local function packed_size(fh, path, t)
  local n, ext = 0, {}
  for _, run in ipairs(t:items()) do
    local name = run.type:name()
    if not ext[name] then
      local ok, e = pcall(fh.get_type_extent, fh, run.type)
      if not ok then fail("%s: %s", path, error_text(e)) end
      ext[name] = e
    end
    n = n + run.count * ext[name]
  end
  return n
end

-- The string.pack format of a record marker: byte order and size.
local ORDERS = { little = "<", big = ">", native = "=" }
local function marker_format(option, order, bytes)
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
  local function marker(at)
    local ok, b = pcall(fh.read_at, fh, at, mbytes, lmpio.BYTE)
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
local function fortran_records(world, fh, path, total, fmt, order)
  local packed, err = "", nil
  if world:rank() == 0 then
    local ok, e = pcall(function()
      local recs, reason = read_records(fh, path, total, fmt)
      if not recs then fail("%s", framing_error(fh, path, total, fmt, reason, order)) end
      local parts = {}
      for i, r in ipairs(recs) do parts[i] = string.pack("<i8i8", r[1], r[2]) end
      packed = table.concat(parts)
    end)
    if not ok then err = getmetatable(e) == Fail and e.msg or error_text(e) end
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

-- dump --fortran: every record of a Fortran sequential file, a line saying
-- its number, offset and marker, then its payload's values as elements of
-- --type (the first record's of --header-type when given), packed as in
-- convert.  The markers are read in the order --markers gives, else in the
-- order and size (4 or 8 bytes) that frames the whole file.
dump_fortran = function(o, path)
  for _, k in ipairs({ "disp", "filetype", "offset", "count" }) do
    if o[k] then fail("dump --fortran: --%s does not apply (the markers frame the whole file)", k) end
  end
  local env = sandbox()
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
    fmt = marker_format("--markers", o.markers, sizes[1])
    local reason
    recs, reason = read_records(fh, path, total, fmt)
    if not recs then fail("%s", framing_error(fh, path, total, fmt, reason, "--markers")) end
    how = "--markers " .. o.markers
  else
    local best = { n = -1 }
    local native = string.pack("=i2", 1) == "\1\0" and { "<", ">" } or { ">", "<" }
    for _, size in ipairs(sizes) do
      for _, order in ipairs(native) do
        local f = order .. "i" .. size
        local r, reason, n = read_records(fh, path, total, f)
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
    local k = { size = packed_size(fh, path, tt), ext = tt:extent(), items = tt:items(), formats = {},
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
    k.names = not k.predefined and not o["no-header"] and table.concat(column_names(tt, k.items), " ")
    k.chunk = math.max(1, 65536 // math.max(k.ext, k.size)) -- elements per read
    k.buf = not k.predefined and lmpio.buffer(k.chunk * k.ext)
    kinds[tt] = k
    return k
  end
  local line = {}
  for r, rec in ipairs(recs) do
    local at, len = rec[1], rec[2]
    out:write(string.format("record %d at offset %d: marker %d\n", r, at, len))
    local tt = (r == 1 and ht) or t
    local texpr = (r == 1 and ht) and o["header-type"] or o.type or o.etype or "BYTE"
    local k = kind(tt, (r == 1 and ht) and "--header-type" or (o.type and "--type" or "--etype"))
    local n = len // k.size
    if k.names and n > 0 then out:write(k.names, "\n") end
    local done, column = 0, 0
    while done < n do
      local m = math.min(k.chunk, n - done)
      local ok, a, got = pcall(fh.read_at, fh, at + mbytes + done * k.size, k.buf or m, k.buf and m or tt, k.buf and tt)
      if not ok then fail("%s: record %d: %s", path, r, error_text(a)) end
      if got < m then fail("%s: record %d: a read returned fewer elements than the markers promised (did the file change?)", path, r) end
      if k.predefined then
        local f = k.formats[tt:name()]
        for i = 1, m do
          column = column + 1
          line[column] = f(a[i])
          if column == columns then
            out:write(table.concat(line, " ", 1, column), "\n")
            column = 0
          end
        end
      else
        local bytes = a:tostring(1, m * k.ext)
        for i = 0, m - 1 do
          local c = 0
          for _, run in ipairs(k.items) do
            local from = i * k.ext + run.offset
            local vals = lmpio.array(run.type, bytes:sub(from + 1, from + run.count * run.type:size()))
            local f = k.formats[run.type:name()]
            for j = 1, run.count do
              c = c + 1
              line[c] = f(vals[j])
            end
          end
          out:write(table.concat(line, " ", 1, c), "\n")
        end
      end
      done = done + m
    end
    if column > 0 then out:write(table.concat(line, " ", 1, column), "\n") end
    if len % k.size ~= 0 then
      out:write(string.format("(%d bytes left over: not a whole %s of %d bytes)\n", len % k.size, texpr, k.size))
    end
  end
  out:flush()
end

-- Converts n elements of t from IN at byte inoff to OUT at byte outoff,
-- independently, chunk after chunk (buf holds chunk elements).
local function convert_run(fin, fout, inpath, outpath, buf, chunk, t, n, inoff, insize, outoff, outsize, where)
  local done = 0
  while done < n do
    local m = math.min(chunk, n - done)
    local ok, e, got = pcall(fin.read_at, fin, inoff + done * insize, buf, m, t)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    if got < m then
      fail("%s: %s: a read returned fewer elements than the file size promised (did it change?); %s is incomplete",
           inpath, where, outpath)
    end
    ok, e = pcall(fout.write_at, fout, outoff + done * outsize, buf, m, t)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
    done = done + m
  end
end

local function convert(argv)
  local pos, o = parse(argv, 2, {
    type = true, etype = true, from = true, to = true, disp = true, ["datarep-file"] = true, help = false,
    ["header-type"] = true, fortran = false, markers = true, ["from-markers"] = true, ["to-markers"] = true,
    ["marker-size"] = true, shape = true, order = true,
  }, "convert")
  if o.help then return io.stdout:write(usage.convert) end
  check_positional(pos, 2, "convert", "IN and OUT")
  local inpath, outpath = pos[1], pos[2]
  if inpath == outpath then fail("convert: IN and OUT are the same file (%s)", inpath) end
  if o.type and o.etype and o.type ~= o.etype then fail("convert: --type and --etype differ") end
  local texpr = o.type or o.etype
  -- .npy: IN's header gives the type, shape and representation
  local npy_in = o.from == "npy" or (not o.from and is_npy(inpath))
  local npy_out = o.to == "npy"
  if npy_in or npy_out then
    for _, k in ipairs({ "disp", "header-type", "fortran" }) do
      if o[k] then fail("convert: --%s with a .npy file (its header is the .npy's)", k) end
    end
  end
  if not npy_out and (o.shape or o.order) then fail("convert: --%s is for a .npy OUT (--to npy)", o.shape and "shape" or "order") end
  if not texpr and not npy_in then fail("convert: say the element type with --type (e.g. --type DOUBLE)") end
  if o.disp and o["header-type"] then fail("convert: give a header either as bytes (--disp) or as a type (--header-type)") end
  if o.disp and o.fortran then fail("convert: --disp with --fortran: the header is a record of its own (--header-type)") end
  if not o.fortran then
    for _, k in ipairs({ "markers", "from-markers", "to-markers", "marker-size" }) do
      if o[k] then fail("convert: --%s is for Fortran files (--fortran)", k) end
    end
  end
  module()
  local world = lmpio.world
  local rank, size = world:rank(), world:size()
  local env = sandbox()
  local fin_npy, npy
  if npy_in then fin_npy, npy = npy_open(world, inpath, "r") end
  local t = texpr and datatype(o.type and "--type" or "--etype", texpr, env) or npy.type
  if npy and t:name() ~= npy.type:name() then
    fail("--type: %s, but %s holds %s (its .npy header)", texpr, inpath, npy.type:name())
  end
  texpr = texpr or t:name()
  local ht = o["header-type"] and datatype("--header-type", o["header-type"], env)
  local disp = integer("--disp", o.disp or "0", env, 0)
  if t:size() == 0 then fail("--type: %s has no data", texpr) end
  if ht and ht:size() == 0 then fail("--header-type: %s has no data", o["header-type"]) end
  local mbytes = integer("--marker-size", o["marker-size"] or "4", env, 0)
  if mbytes ~= 4 and mbytes ~= 8 then fail("--marker-size: %d bytes (4 or 8)", mbytes) end
  run_datarep_file(o["datarep-file"])
  local from = npy and npy.datarep or o.from or "native"
  local to = npy_out and "native" or o.to or "native"
  -- Markers: in the representation's byte order when it has one.
  local function default_order(rep) return (rep == "external32" or rep == "internal") and "big" or "native" end
  local infmt = o.fortran and marker_format(o["from-markers"] and "--from-markers" or "--markers",
                                            o["from-markers"] or o.markers or default_order(from), mbytes)
  local outfmt = o.fortran and marker_format(o["to-markers"] and "--to-markers" or "--markers",
                                             o["to-markers"] or o.markers or default_order(to), mbytes)

  local fin <close> = fin_npy or open(world, inpath, "r")
  local total = fin:get_size()
  if total < disp then fail("%s: %d bytes, shorter than the header (--disp %d)", inpath, total, disp) end
  local header = disp > 0 and fin:read_at_all(0, rank == 0 and disp or 0, lmpio.BYTE)
  local recs = o.fortran and fortran_records(world, fin, inpath, total, infmt, "--from-markers")
  set_view(fin, inpath, 0, lmpio.BYTE, lmpio.BYTE, from)
  local insize = packed_size(fin, inpath, t)
  local hin = ht and packed_size(fin, inpath, ht)
  local tname = texpr .. (from ~= "native" and " in " .. from or "")
  local nin -- elements of IN
  if npy then
    nin = 1
    for _, d in ipairs(npy.shape) do nin = nin * d end
    hin = npy.offset -- (the file holds them: npy.open "r" checked)
  elseif not o.fortran then
    local head = hin or disp
    if total < head then
      fail("%s: %d bytes, shorter than the header (--header-type, %d bytes in %s)", inpath, total, head, from)
    end
    if (total - head) % insize ~= 0 then
      fail("%s: %d bytes after the header are not a whole number of elements of %d bytes (%s)",
           inpath, total - head, insize, tname)
    end
  else
    for k, r in ipairs(recs) do
      local sz, what = insize, tname
      if k == 1 and ht then sz, what = hin, o["header-type"] .. " (--header-type)" end
      if r[2] % sz ~= 0 then
        fail("%s: record %d at offset %d: %d bytes are not a whole number of elements of %d bytes (%s)",
             inpath, k, r[1], r[2], sz, what)
      end
    end
  end
  -- OUT may name IN another way (a link, another spelling): opening it "w"
  -- would empty IN before a byte of it is read.
  if world:allreduce(lmpio.same_file(inpath, outpath), "lor") then
    fail("convert: IN and OUT are the same file (%s and %s)", inpath, outpath)
  end
  local fout_npy, onpy
  if npy_out then
    local n = nin or (total - (hin or disp)) // insize
    local shape = o.shape and evaluate("--shape", o.shape, {}) or npy and npy.shape or { n }
    local m = type(shape) == "table" and 1 or -1
    for _, d in ipairs(type(shape) == "table" and shape or {}) do m = math.type(d) == "integer" and d >= 0 and m * d or -1 end
    if m ~= n then
      fail("--shape: '%s' holds %s elements, IN holds %d", o.shape, m < 0 and "no number of" or tostring(m), n)
    end
    fout_npy, onpy = npy_open(world, outpath, "w", { type = t, shape = shape, order = o.order or npy and npy.order or "C" })
  end
  local fout <close> = fout_npy or open(world, outpath, "w")
  if header then fout:write_at_all(0, header) end -- as it is

  -- Fortran: OUT's records, and their markers while OUT's view is bytes.
  local outrecs
  if o.fortran then
    outrecs = {}
    local lim = mbytes == 4 and 0x7fffffff or math.maxinteger
    local at = 0
    local osz = {} -- payload bytes of an element of OUT, filled after set_view
    for k, r in ipairs(recs) do outrecs[k] = { r[2] } end
    -- the sizes in OUT need its view: markers after it, through a second
    -- handle of this rank with the default view (bytes as they are)
    set_view(fout, outpath, 0, lmpio.BYTE, lmpio.BYTE, to)
    osz.t = packed_size(fout, outpath, t)
    osz.h = ht and packed_size(fout, outpath, ht)
    for k, r in ipairs(recs) do
      local len = (k == 1 and ht) and r[2] // hin * osz.h or r[2] // insize * osz.t
      if len > lim then
        fail("%s: record %d becomes %d bytes in %s, too long for a %d-byte marker", outpath, k, len, to, mbytes)
      end
      outrecs[k] = { at, len }
      at = at + 2 * mbytes + len
    end
    local first, mine = lmpio.block(#recs, size, rank)
    local mk <close> = open(lmpio.self, outpath, "r+")
    for k = first + 1, first + mine do
      local r = outrecs[k]
      local m = string.pack(outfmt, r[2])
      local ok, e = pcall(mk.write_at, mk, r[1], m)
      if ok then ok, e = pcall(mk.write_at, mk, r[1] + mbytes + r[2], m) end
      if not ok then fail("%s: %s", outpath, error_text(e)) end
    end
    mk:close()
    world:barrier()
    -- The payloads: the header record on rank 0, then every rank its block
    -- of all the other records' elements.
    local mext = math.max(t:extent(), ht and ht:extent() or 0)
    local chunk = math.max(1, (1 << 22) // math.max(mext, insize, osz.t))
    local buf = lmpio.buffer(chunk * mext)
    local k0 = 1
    if ht and #recs > 0 then
      if rank == 0 then
        local hb = lmpio.buffer(math.max(1, recs[1][2] // hin) * ht:extent())
        convert_run(fin, fout, inpath, outpath, hb, recs[1][2] // hin, ht, recs[1][2] // hin,
                    mbytes, hin, mbytes, osz.h, "record 1")
      end
      k0 = 2
    end
    -- elements before each record (from k0), for a binary search
    local before, n = {}, 0
    for k = k0, #recs do
      before[k] = n
      n = n + recs[k][2] // insize
    end
    local e0, emine = lmpio.block(n, size, rank)
    local k = k0
    local lo, hi = k0, #recs
    while lo < hi do -- the last record whose elements start at or before e0
      local mid = (lo + hi + 1) // 2
      if before[mid] <= e0 then lo = mid else hi = mid - 1 end
    end
    k = lo
    local e = e0
    while emine > 0 and k <= #recs do
      local cnt = recs[k][2] // insize
      local j = e - before[k] -- this record's first element of mine
      local m = math.min(cnt - j, emine)
      if m > 0 then
        convert_run(fin, fout, inpath, outpath, buf, chunk, t, m, recs[k][1] + mbytes + j * insize, insize,
                    outrecs[k][1] + mbytes + j * osz.t, osz.t, "record " .. k)
        e, emine = e + m, emine - m
      end
      k = k + 1
    end
    world:barrier()
    fout:close()
    fin:close()
    return
  end

  set_view(fout, outpath, 0, lmpio.BYTE, lmpio.BYTE, to)
  local outsize = packed_size(fout, outpath, t)
  local hout = onpy and onpy.offset or ht and packed_size(fout, outpath, ht) or disp
  local hin_ = hin or disp
  if ht then -- the header: one element, converted on rank 0
    local hb = lmpio.buffer(ht:extent())
    local ok, e, got = pcall(fin.read_at_all, fin, 0, hb, rank == 0 and 1 or 0, ht)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    if world:allreduce(got < (rank == 0 and 1 or 0), "lor") then fail("%s: the header could not be read", inpath) end
    ok, e = pcall(fout.write_at_all, fout, 0, hb, rank == 0 and 1 or 0, ht)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
  end
  local n = nin or (total - hin_) // insize
  local first, mine = lmpio.block(n, size, rank)
  local mext = t:extent()
  local chunk = math.max(1, (1 << 22) // math.max(mext, insize, outsize)) -- elements per step
  local buf = lmpio.buffer(math.min(chunk, math.max(mine, 1)) * mext)
  chunk = math.min(chunk, math.max(mine, 1))
  local steps = world:allreduce((mine + chunk - 1) // chunk, "max")
  for step = 0, steps - 1 do
    local at = step * chunk
    local m = math.max(0, math.min(chunk, mine - at))
    local ok, e, got = pcall(fin.read_at_all, fin, hin_ + (first + at) * insize, buf, m, t)
    if not ok then fail("%s: %s", inpath, error_text(e)) end
    -- IN shorter than its size said (it changed meanwhile): no zeros in OUT
    local short = world:allreduce(got < m and first + at + got or -1, "max")
    if short >= 0 then
      fail("%s: a read returned fewer elements than its size promised (it ends at element %d of %d: did it change?); %s is incomplete",
           inpath, short, n, outpath)
    end
    ok, e = pcall(fout.write_at_all, fout, hout + (first + at) * outsize, buf, m, t)
    if not ok then fail("%s: %s", outpath, error_text(e)) end
  end
  fout:close()
  fin:close()
end

-- ---- map --------------------------------------------------------------------

local DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
-- What map may do, whatever it is asked: the work and memory follow the
-- drawing (bytes times ranks), never the number of items a view repeats.
local MAX_BYTES = 1 << 20 -- bytes drawn
local MAX_RANKS = 4096 -- ranks drawn (--svg; 62 in the terminal)
local MAX_BLOCKS = 1000000 -- blocks of one item of one rank's filetype walked
local MAX_WORK = 1 << 24 -- bytes tested and blocks walked, all ranks together
local MAX_BOXES = 1 << 16 -- boxes of an SVG

-- The views of every rank: disp, extent and filetype.
local function views(o, nranks)
  local list = {}
  for r = 0, nranks - 1 do
    local env = sandbox({ rank = r, size = nranks })
    local disp = integer("--disp", o.disp or "0", env, 0)
    local etype = datatype("--etype", o.etype or "BYTE", env)
    local filetype = o.filetype and datatype("--filetype", o.filetype, env) or etype
    local ext = filetype:extent()
    if ext <= 0 then fail("--filetype: rank %d's filetype has extent %d (it must be positive)", r, ext) end
    if etype:size() == 0 or filetype:size() % etype:size() ~= 0 then
      fail("rank %d: the filetype (%d bytes of data) is not made of etypes (%d bytes)", r, filetype:size(), etype:size())
    end
    list[r] = { disp = disp, ext = ext, filetype = filetype }
  end
  return list
end

-- Rank r's view in [0, nbytes), without walking its items one by one.
-- Item i's block at offset b covers file byte p = disp + b + i*ext, so p is
-- the view's when some block byte q = disp + b (item 0) has q = p modulo
-- the extent and q <= p.  first[c] is the least such q of each residue c
-- of the drawing (c < min(ext, nbytes)); with the blocks in file order the
-- first block to reach a residue gives its least q, and next[] (a "next
-- residue not yet reached" forest) makes each residue cost one visit.
-- Returns whether byte p is the view's: a function of p.
local function view_bytes(v, nbytes, work)
  local ext, disp = v.ext, v.disp
  local R = math.min(ext, nbytes)
  local offs, lens, sorted, walked = {}, {}, true, 0
  for off, len in v.filetype:blocks() do
    if walked == MAX_BLOCKS then
      fail("--filetype: more than %d blocks in one item: too many to draw", MAX_BLOCKS)
    end
    walked = walked + 1
    work(1)
    if disp + off < nbytes then -- a block past the drawing reaches nothing in it
      if #offs > 0 and off < offs[#offs] then sorted = false end
      offs[#offs + 1], lens[#offs + 1] = off, len
    end
  end
  local order = {}
  for k = 1, #offs do order[k] = k end
  if not sorted then table.sort(order, function(a, b) return offs[a] < offs[b] end) end
  work(R)
  local first, next = {}, {}
  for c = 0, R do next[c] = c end
  local function find(c) -- the first residue >= c not reached (R: none)
    local root = c
    while next[root] ~= root do root = next[root] end
    while next[c] ~= root do c, next[c] = next[c], root end
    return root
  end
  local function reach(a, b, q, c0) -- residues [a, b) from the block at q
    local c = find(a)
    while c < b do
      first[c] = q + (c - c0) % ext
      next[c] = c + 1
      c = find(c + 1)
    end
  end
  for _, k in ipairs(order) do
    local q, len = disp + offs[k], math.min(lens[k], ext)
    local c0 = q % ext
    if c0 < R then reach(c0, math.min(c0 + len, R), q, c0) end
    if c0 + len > ext then reach(0, math.min(c0 + len - ext, R), q, c0) end
    if find(0) == R then break end -- every residue reached
  end
  return function(p)
    local f = first[p % ext]
    return f ~= nil and f <= p
  end
end

local function xml(s) return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" })) end

local function svg(path, cov, owners, nranks, nbytes, width, title)
  local cw, ch, left, top = 12, 24, 72, 40
  local rows = (nbytes + width - 1) // width
  local legend_y = top + rows * (ch + 6) + 16
  local per_row = math.max(1, (width * cw) // 90)
  local legend_rows = (nranks + 1 + per_row - 1) // per_row
  local W = left + width * cw + 16
  local H = legend_y + legend_rows * 22 + 10
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  W = math.max(W, left + #title * 8)
  local function colour(r) return string.format("hsl(%d,65%%,55%%)", r * 360 // nranks) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">', W, H, W, H)
  add('<title>%s</title>', xml(title))
  add('<text x="%d" y="20">%s</text>', left, xml(title))
  -- the row grid: unowned bytes are the background
  for row = 0, rows - 1 do
    local y = top + row * (ch + 6)
    local n = math.min(width, nbytes - row * width)
    add('<text x="%d" y="%d" text-anchor="end">%d</text>', left - 6, y + 16, row * width)
    add('<rect class="row" x="%d" y="%d" width="%d" height="%d" fill="#eeeeee" stroke="#999999"/>', left, y, n * cw, ch)
  end
  -- one box per block of a rank (split where a row ends)
  local function boxes(class, r, iv, fill, extra)
    local lo, hi = iv[1], iv[2]
    while lo <= hi do
      local row = lo // width
      local last = math.min(hi, row * width + width - 1)
      local x, y = left + (lo - row * width) * cw, top + row * (ch + 6)
      add('<rect class="%s"%s x="%d" y="%d" width="%d" height="%d" fill="%s" %s><title>%s bytes %d-%d</title></rect>',
          class, r and string.format(' data-rank="%d"', r) or "", x, y, (last - lo + 1) * cw, ch, fill,
          extra, r and "rank " .. r .. ":" or "more than one rank:", iv[1], iv[2])
      lo = last + 1
    end
  end
  for r = 0, nranks - 1 do
    for _, iv in ipairs(cov[r]) do boxes("block", r, iv, colour(r), 'stroke="#333333" fill-opacity="0.85"') end
  end
  -- bytes of more than one rank: outlined in red on top
  local run
  for b = 0, nbytes do
    if b < nbytes and owners[b] == -2 then
      if run then run[2] = b else run = { b, b } end
    elseif run then
      boxes("overlap", nil, run, "none", 'stroke="#d00000" stroke-width="3"')
      run = nil
    end
  end
  -- legend
  for k = 0, nranks do
    local x = left + (k % per_row) * 90
    local y = legend_y + (k // per_row) * 22
    if k < nranks then
      add('<rect class="legend" x="%d" y="%d" width="14" height="14" fill="%s" stroke="#333333"/>', x, y, colour(k))
      add('<text x="%d" y="%d">rank %d</text>', x + 20, y + 12, k)
    else
      add('<rect class="legend" x="%d" y="%d" width="14" height="14" fill="none" stroke="#d00000" stroke-width="3"/>', x, y)
      add('<text x="%d" y="%d">overlap</text>', x + 20, y + 12)
    end
  end
  add('</svg>')
  local f, err = io.open(path, "w")
  if not f then fail("--svg: %s", err) end
  f:write(table.concat(out, "\n"), "\n")
  f:close()
end

local function map(argv)
  local pos, o = parse(argv, 2, {
    ranks = true, disp = true, etype = true, filetype = true, bytes = true, width = true, svg = true, help = false,
  }, "map")
  if o.help then return io.stdout:write(usage.map) end
  check_positional(pos, 0, "map", "no argument")
  local nranks = integer("--ranks", o.ranks or "4", nil, 1)
  local width = integer("--width", o.width or "64", nil, 1)
  if nranks > #DIGITS and not o.svg then
    fail("map: more than %d ranks cannot be drawn with one character each: use --svg FILE", #DIGITS)
  end
  module()
  if lmpio.world:rank() ~= 0 then return end
  if nranks > MAX_RANKS then fail("map: more than %d ranks: too many to draw", MAX_RANKS) end
  local vs = views(o, nranks)
  local nbytes
  if o.bytes then
    nbytes = integer("--bytes", o.bytes, nil, 1)
    if nbytes > MAX_BYTES then fail("--bytes: at most %d bytes can be drawn", MAX_BYTES) end
  else
    nbytes = 0
    for r = 0, nranks - 1 do nbytes = math.max(nbytes, vs[r].disp + 2 * vs[r].ext) end
    nbytes = math.max(1, math.min(4096, nbytes))
  end
  if nranks * nbytes > MAX_WORK then
    fail("map: %d bytes of %d ranks is too much to draw (at most %d bytes times ranks): draw fewer bytes (--bytes)",
         nbytes, nranks, MAX_WORK)
  end
  local done = 0
  local function work(n)
    done = done + n
    if done > MAX_WORK then
      fail("map: too much work to draw these views (more than %d blocks walked and bytes tested): draw fewer bytes or ranks",
           MAX_WORK)
    end
  end
  -- owners[p]: the rank of byte p, -2 for more than one; cov[r]: rank r's
  -- runs of bytes {first, last} (for --svg only)
  local cov, owners, boxes = {}, {}, 0
  for r = 0, nranks - 1 do
    local mine = view_bytes(vs[r], nbytes, work)
    work(nbytes)
    local runs, run = {}, nil
    for p = 0, nbytes - 1 do
      if mine(p) then
        owners[p] = owners[p] and -2 or r
        if not o.svg then -- nothing more to keep
        elseif run and run[2] == p - 1 then
          run[2] = p
        else
          boxes = boxes + 1
          if boxes > MAX_BOXES then
            fail("map --svg: more than %d boxes to draw: draw fewer bytes (--bytes)", MAX_BOXES)
          end
          run = { p, p }
          runs[#runs + 1] = run
        end
      end
    end
    cov[r] = runs
  end
  if o.svg then
    local title = string.format("%d ranks: disp %s, etype %s, filetype %s; bytes 0-%d", nranks, o.disp or "0",
                                o.etype or "BYTE", o.filetype or o.etype or "BYTE", nbytes - 1)
    return svg(o.svg, cov, owners, nranks, nbytes, width, title)
  end
  local out = io.stdout
  local digits = #tostring(nbytes - 1)
  local row = {}
  for start = 0, nbytes - 1, width do
    local n = math.min(width, nbytes - start)
    for k = 1, n do
      local w = owners[start + k - 1]
      row[k] = w == nil and "." or w == -2 and "!" or DIGITS:sub(w + 1, w + 1)
    end
    out:write(string.format("%" .. digits .. "d  ", start), table.concat(row, "", 1, n), "\n")
  end
end

-- ---- run --------------------------------------------------------------------
-- The launcher is a shell script: it copies its standard input into one
-- FIFO and the other FIFO to its standard output (two cat processes) while
-- mpirun runs, with Open MPI's fork agent making rank 0's standard input
-- and output those FIFOs.  The rank's own descriptors 0 and 1 are the
-- FIFOs, so print, "-" and a plain C program's stdin all see them, in
-- order, and mpirun forwards nothing of rank 0's.  No MPI in this process.

-- The fork agent's script: every rank is started as
-- `/bin/sh -c AGENT DIR PROGRAM ARGS`.  The first rank 0 (the mkdir: not
-- the rank 0 of a spawned job) takes DIR's FIFOs as its standard input and
-- output; then every rank becomes PROGRAM.  Open MPI cuts the agent at its
-- spaces: the script gets tabs instead (agent() below).
local AGENT = [=[
if [ "${OMPI_COMM_WORLD_RANK-${PMIX_RANK-}}" = 0 ]; then
if mkdir "$0/rank0" 2>/dev/null; then exec <"$0/in" >"$0/out"
elif [ ! -d "$0" ]; then printf 'MSG\n' >&2; exit 1; fi
fi
exec "$@"
]=]

local function agent()
  local msg = "lmpio run: rank 0 runs on another machine than lmpio run: its standard input and output cannot reach it"
  return (AGENT:gsub("MSG", (msg:gsub(" ", "\\040"))):gsub(" ", "\t"))
end

-- $1 mpirun, $2 the agent's script, then mpirun's arguments.
local LAUNCHER = [=[
mpirun=$1 agent=$2
shift 2
case $("$mpirun" --version 2>/dev/null) in
*"(Open MPI) "[1-4].*) ;;
*)
  echo "lmpio run: $mpirun is not Open MPI 1 to 4: running it as it is (its own forwarding of standard input and output)" >&2
  exec "$mpirun" "$@" ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-run.XXXXXX") || exit 1
case $dir in *[[:space:]]*) # the agent's command line is cut at spaces
  rmdir "$dir"
  dir=$(mktemp -d /tmp/lmpio-run.XXXXXX) || exit 1 ;;
esac
feeder= drainer=
trap 'for p in $feeder $drainer; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
mkfifo -m 600 "$dir/in" "$dir/out" || exit 1
# Each cat opens its FIFO (and waits there for rank 0 to open the other
# end); an asynchronous command's standard input would be /dev/null: fd 3.
exec 3<&0
cat <&3 >"$dir/in" 3<&- &
feeder=$!
exec 3<&-
cat <"$dir/out" &
drainer=$!
# More ranks than cores are allowed, as --oversubscribe does (a pipeline
# on a laptop), unless the arguments or the environment say otherwise.
case " $* " in
*" --nooversubscribe "* | *" -nooversubscribe "*) ;;
*) [ -n "${OMPI_MCA_rmaps_base_oversubscribe+set}" ] || export OMPI_MCA_rmaps_base_oversubscribe=1 ;;
esac
"$mpirun" --stdin none --mca orte_fork_agent "/bin/sh -c $agent $dir" "$@" </dev/null >&2
status=$?
# Rank 0 is gone: what it did not read is nobody's.  A drainer still
# waiting for rank 0 to open its FIFO gets an end of file.
kill "$feeder" 2>/dev/null
wait "$feeder" 2>/dev/null
feeder=
: <>"$dir/out"
wait "$drainer"
drainer=
if [ ! -d "$dir/rank0" ] && [ "$status" -eq 0 ]; then
  echo "lmpio run: no rank 0 started here (OMPI_COMM_WORLD_RANK unset?): its standard input and output were not passed" >&2
  status=1
fi
exit "$status"
]=]

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(argv)
  if argv[2] == "--help" or argv[2] == "-h" then return io.stdout:write(usage.run) end
  if argv[2] == nil then fail("run: say what to run: lmpio run [MPIRUN OPTIONS] PROGRAM [ARGS] (see 'lmpio run --help')") end
  -- Lua programs find the module that this command finds (the rock's, or
  -- build/lua for build/bin/lmpio): its search paths are theirs.
  local paths = package.searchpath("lmpio", package.cpath)
    and "LUA_PATH_5_4=" .. quote(package.path) .. " LUA_CPATH_5_4=" .. quote(package.cpath) .. " " or ""
  local words = { paths .. "exec /bin/sh -c", quote(LAUNCHER), "lmpio-run", quote(os.getenv("MPIRUN") or "mpirun"), quote(agent()) }
  for i = 2, #argv do words[#words + 1] = quote(argv[i]) end
  io.stdout:flush()
  local _, how, code = os.execute(table.concat(words, " "))
  os.exit(how == "signal" and 128 + code or code)
end

-- ---- dropin-path, doc-path -----------------------------------------------------
-- The files installed beside the module, found without loading it (no MPI):
-- from where the module would be loaded (package.cpath: the rock's tree,
-- or build/lua of a build, whose ../lib and ../doc hold them) and from where
-- this script is (the rock keeps it in its own directory, beside doc/;
-- make install puts it in PREFIX/bin, beside PREFIX/lib).

local function dirname(p) return p:match("^(.*)/[^/]*$") or "." end

-- p as an absolute path (relative ones from the working directory).
local function absolute(p)
  if p:sub(1, 1) == "/" then return p end
  local cwd = os.getenv("PWD")
  if not cwd or cwd:sub(1, 1) ~= "/" then
    local f = io.popen("pwd")
    cwd = f and f:read("l")
    if f then f:close() end
  end
  if not cwd then fail("cannot tell the working directory") end
  return (cwd .. "/" .. p):gsub("/%./", "/")
end

local function readable(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The first readable file of the candidates, else an error naming what
-- was looked for and where.
local function installed(what, candidates)
  local looked = {}
  for _, p in ipairs(candidates) do
    if readable(p) then
      -- without dir/../ where that still names a file
      local short, n = absolute(p), 1
      while n > 0 do short, n = short:gsub("/[^/]+/%.%./", "/", 1) end
      return readable(short) and short or absolute(p)
    end
    looked[#looked + 1] = p
  end
  fail("%s not found (looked at %s)", what, #looked > 0 and table.concat(looked, ", ") or "nothing: no lmpio module on package.cpath")
end

local function places(name)
  local module = package.searchpath("lmpio", package.cpath)
  local script = arg and arg[0]
  local list = {}
  local function add(p) if p then list[#list + 1] = p end end
  if name == "dropin" then
    add((package.searchpath("lmpio.liblmpio-mpi", package.cpath)))
    add(module and dirname(module) .. "/../lib/liblmpio-mpi.so")
    add(script and dirname(script) .. "/../lib/liblmpio-mpi.so")
  else
    add(script and dirname(script) .. "/../doc/index.html")
    add(module and dirname(module) .. "/../doc/index.html")
  end
  return list
end

usage["dropin-path"] = [[
usage: lmpio dropin-path

Prints the absolute path of liblmpio-mpi.so, the drop-in library that runs
the MPI-IO of unmodified MPI programs on lmpio (installed with the rock,
built by make in build/lib, or installed by make install):

  mpirun -n 4 -x LD_PRELOAD=$(lmpio dropin-path) ./app
]]

usage["doc-path"] = [[
usage: lmpio doc-path

Prints the absolute path of the index.html of the reference of the Lua
module (installed with the rock; make doc writes it in build/doc).
]]

local function path_command(name, what)
  return function(argv)
    local pos, o = parse(argv, 2, { help = false }, name)
    if o.help then return io.stdout:write(usage[name]) end
    check_positional(pos, 0, name, "no argument")
    io.stdout:write(installed(what, places(name == "dropin-path" and "dropin" or "doc")), "\n")
  end
end

-- ---- main -------------------------------------------------------------------

local commands = { dump = dump, convert = convert, map = map, run = run,
                   ["dropin-path"] = path_command("dropin-path", "liblmpio-mpi.so (the drop-in library)"),
                   ["doc-path"] = path_command("doc-path", "the HTML reference (index.html)") }

local function main(argv)
  local name = argv[1]
  if name == nil then
    io.stderr:write(usage.main)
    os.exit(1)
  end
  if name == "--help" or name == "-h" or name == "help" then
    if argv[2] and usage[argv[2]] and commands[argv[2]] then return io.stdout:write(usage[argv[2]]) end
    return io.stdout:write(usage.main)
  end
  local command = commands[name]
  if not command then fail("unknown command '%s' (commands: dump, convert, map, run, dropin-path, doc-path; see 'lmpio --help')", name) end
  return command(argv)
end

local ok, err = xpcall(main, function(e)
  if getmetatable(e) == Fail then return e end
  -- anything else is a bug of this script or an error of the module: say
  -- what it was, with where it came from, but still in a few lines
  return setmetatable({ msg = error_text(e), bug = debug.traceback("", 2) }, Fail)
end, arg)
if not ok then
  -- Lua calls no handler for an out-of-memory error (err is its message),
  -- nor again for a handler that failed: one line all the same, once the
  -- memory of the work that failed is free.
  collectgarbage()
  if getmetatable(err) ~= Fail then err = { msg = type(err) == "string" and err or tostring(err) } end
  local rank, size = 0, 1
  if lmpio then rank, size = lmpio.world:rank(), lmpio.world:size() end
  if rank == 0 or size == 1 then
    io.stderr:write("lmpio: ", err.msg, "\n")
    if err.bug and os.getenv("LMPIO_DEBUG") then io.stderr:write(err.bug, "\n") end
  end
  io.stdout:flush()
  io.stderr:flush()
  if size > 1 then
    -- Errors of collective calls (and of the arguments, which every rank
    -- reads alike) happen on every rank: rank 0 reports and ends the job.
    -- Another rank failing alone waits for rank 0 to do so, then reports.
    if rank ~= 0 then
      local t = lmpio.wtime()
      while lmpio.wtime() - t < 2 do end
      io.stderr:write("lmpio: rank ", rank, ": ", err.msg, "\n")
    end
    lmpio.abort(1)
  end
  os.exit(1)
end
