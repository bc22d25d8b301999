#!/usr/bin/env lua5.4
-- The `lmpio` command: look at and convert binary files without writing a
-- program.  Installed as $(PREFIX)/bin/lmpio by `make install` and by the
-- rock.  Runs alone or under mpirun (then the work is shared by the ranks
-- and the output is the same).
--
--   lmpio dump FILE [options]       values of a file through a view, as text
--   lmpio convert IN OUT [options]  rewrite a file in another representation
--   lmpio map [options]             which rank owns which bytes of a view
--   lmpio COMMAND --help
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()

local usage = {}
usage.main = [[
usage: lmpio COMMAND [options]   (alone or under mpirun)
  dump FILE        print the values of a file through a view
  convert IN OUT   rewrite a file from one data representation to another
  map              draw which rank owns which bytes of a view
`lmpio COMMAND --help` describes each.
]]
usage.view = [[
view options (the same as fh:set_view; expressions are Lua, see below):
  --disp N             displacement in bytes (default 0)
  --etype TYPE         etype (default BYTE)
  --filetype EXPR      filetype (default: the etype)
  --datarep NAME       native (default), external32, internal, or a name
                       registered by --datarep-file
  --datarep-file F     a Lua file run first (lmpio is a global there), e.g.
                       to call lmpio.register_datarep
TYPE and EXPR are Lua expressions evaluated with the predefined types
(DOUBLE, INT, BYTE, ...) and the constructors of lmpio.type (vector,
contiguous, resized, subarray, struct, indexed, ...) in scope, and `rank`
and `size` (the rank a view is for and how many there are), e.g.
  --filetype 'vector(4, 1, 8, DOUBLE)'   --disp 'rank * 8'
]]
usage.dump = [[
usage: lmpio dump FILE [view options] [--type TYPE] [--offset N] [--count N]
Prints the values of FILE seen through the view, one per line:
"<index><TAB><value>", the index counting items from the start of the view.
  --type TYPE     the memory type of the values (default: the etype, which
                  must then be a predefined type)
  --offset N      start at offset N (in etypes of the view; default 0)
  --count N       print at most N values (default: up to the end of file)
]] .. usage.view
usage.convert = [[
usage: lmpio convert IN OUT --from REP --to REP [--etype TYPE] [--filetype EXPR]
Reads IN through a view of representation --from and writes OUT (created or
truncated) through the same view in representation --to: each value is
decoded and encoded again (native, internal, external32, or a representation
registered by --datarep-file).  Under mpirun the ranks share the values.
  --etype TYPE      what the file holds, one etype after the other
                    (default BYTE: a copy)
  --filetype EXPR   (default: the etype)
  --datarep-file F  a Lua file run first (e.g. registering a representation)
]]
usage.map = [[
usage: lmpio map --ranks N [view options] [--bytes B] [--width W] [--svg FILE]
Draws which rank's view holds each byte of a file (one character per byte:
the rank in base 36, '.' for no rank, '*' for more than one), W bytes a
line (default 32), the first B bytes (default: two filetype extents past
the largest displacement).  The view options may use `rank` and `size`,
e.g. --disp 'rank * 8' --etype DOUBLE --filetype 'resized(DOUBLE, 0, size * 8)'.
  --svg FILE   also write the picture as SVG
]] .. usage.view

local function die(msg)
  if rank == 0 then io.stderr:write("lmpio: ", msg, "\n") end
  os.exit(2)
end

-- Options: --name value pairs and positional arguments.
local function parse(args, known)
  local opt, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--help" or a == "-h" then
      opt.help = true
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([%w-]+)=(.*)$")
      if not name then
        name, value = a:sub(3), args[i + 1]
        i = i + 1
      end
      if not known[name] then die(("unknown option --%s (see --help)"):format(name)) end
      if value == nil then die(("option --%s needs a value"):format(name)) end
      opt[name] = value
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opt, pos
end

-- The sandbox of type expressions: predefined types, lmpio.type
-- constructors, rank and size.
local function type_env(r, n)
  local env = { rank = r, size = n, math = math }
  for k, v in pairs(lmpio.type) do env[k] = v end
  for k, v in pairs(lmpio) do
    if type(k) == "string" and k:match("^[%u][%u%d_]*$") and type(v) == "userdata" and tostring(v):match("^lmpio%.") then
      env[k] = v
    end
  end
  return env
end

local function eval(expr, what, r, n)
  local f, err = load("return " .. expr, "=" .. what, "t", type_env(r, n))
  if not f then die(("--%s: %s"):format(what, err)) end
  local ok, v = pcall(f)
  if not ok then die(("--%s: %s"):format(what, tostring(v))) end
  return v
end

-- The view for rank r of n.
local function view_of(opt, r, n)
  local disp = math.tointeger(eval(opt.disp or "0", "disp", r, n))
  if not disp then die("--disp must be an integer") end
  local etype = eval(opt.etype or "BYTE", "etype", r, n)
  local filetype = opt.filetype and eval(opt.filetype, "filetype", r, n) or etype
  return disp, etype, filetype, opt.datarep or "native"
end

local function load_datarep(opt)
  if not opt["datarep-file"] then return end
  local env = setmetatable({ lmpio = lmpio }, { __index = _G })
  local f, err = loadfile(opt["datarep-file"], "t", env)
  if not f then die(err) end
  f()
end

-- Text of one value.
local function text(v)
  if math.type(v) == "integer" then return tostring(v) end
  if type(v) == "number" then return ("%.17g"):format(v) end
  return tostring(v)
end

-- ---- dump -------------------------------------------------------------------

local function dump(args)
  local opt, pos = parse(args, { disp = 1, etype = 1, filetype = 1, datarep = 1, ["datarep-file"] = 1,
                                 type = 1, offset = 1, count = 1 })
  if opt.help or #pos ~= 1 then
    if rank == 0 then io.write(usage.dump) end
    os.exit(opt.help and 0 or 2)
  end
  load_datarep(opt)
  local disp, etype, filetype, datarep = view_of(opt, 0, 1) -- every rank: the same view
  local mtype = opt.type and eval(opt.type, "type", 0, 1) or etype
  if not mtype:is_predefined() then die("--type: give a predefined memory type (the etype is not one)") end
  local offset = math.tointeger(tonumber(opt.offset or "0"))
  local count = opt.count and math.tointeger(tonumber(opt.count))
  if not offset or offset < 0 or (opt.count and (not count or count < 0)) then die("--offset and --count take integers >= 0") end
  local fh <close> = lmpio.open(world, pos[1], "r")
  fh:set_view(disp, etype, filetype, datarep)
  local ratio = mtype:size() -- bytes of one value in memory; etypes per value:
  local esize = etype:size()
  if ratio % esize ~= 0 and esize % ratio ~= 0 then die("--type: a value must be whole etypes, or an etype whole values") end
  fh:seek_shared(offset)
  local out <close> = lmpio.stdout()
  local chunk, index = 8192, offset * esize // ratio
  local left = count
  while not left or left > 0 do
    local wants, want = 0, nil
    for r = 0, size - 1 do
      local w = left and math.max(0, math.min(chunk, left - r * chunk)) or chunk
      if r == rank then want = w end
      wants = wants + w
    end
    local vals, n = fh:read_ordered(want, mtype)
    local counts = world:allgather(n)
    local before, total = 0, 0
    for r = 0, size - 1 do
      if r < rank then before = before + counts[r + 1] end
      total = total + counts[r + 1]
    end
    local lines = {}
    for i = 1, n do lines[i] = ("%d\t%s\n"):format(index + before + i - 1, text(vals[i])) end
    out:write_ordered(table.concat(lines))
    index = index + total
    if left then left = left - total end
    if total < wants then break end -- the end of the file
  end
end

-- ---- convert ------------------------------------------------------------------

local function convert(args)
  local opt, pos = parse(args, { from = 1, to = 1, etype = 1, filetype = 1, ["datarep-file"] = 1, disp = 1 })
  if opt.help or #pos ~= 2 then
    if rank == 0 then io.write(usage.convert) end
    os.exit(opt.help and 0 or 2)
  end
  load_datarep(opt)
  local from, to = opt.from or "native", opt.to or "native"
  local o = { disp = opt.disp, etype = opt.etype, filetype = opt.filetype }
  local disp, etype, filetype = view_of(o, 0, 1)
  local fin <close> = lmpio.open(world, pos[1], "r")
  local fout <close> = lmpio.open(world, pos[2], "w")
  fin:set_view(disp, etype, filetype, from)
  fout:set_view(disp, etype, filetype, to)
  -- how many etypes the input holds: its size over the etype's extent in
  -- the input's representation (a filetype with holes counts its data)
  local fext = fin:get_type_extent(filetype)
  local data_per_ft = filetype:size() // etype:size()
  local bytes = fin:get_size() - disp
  local n = bytes > 0 and (bytes // fext) * data_per_ft or 0
  local rest = bytes > 0 and bytes % fext or 0
  if rest > 0 then n = n + math.min(data_per_ft, rest // fin:get_type_extent(etype)) end
  -- each rank a contiguous share, moved in steps of bounded size
  local share = (n + size - 1) // size
  local first = math.min(n, rank * share)
  local last = math.min(n, first + share)
  local step = math.max(1, (4 << 20) // math.max(1, etype:size()))
  local steps = world:allreduce((last - first + step - 1) // step, "max")
  local esize = etype:size()
  for s = 0, steps - 1 do
    local a = math.min(last, first + s * step)
    local b = math.min(last, a + step)
    local buf = lmpio.buffer((b - a) * esize)
    fin:read_at_all(a, buf, b - a, etype)
    fout:write_at_all(a, buf, b - a, etype)
  end
  fout:sync()
end

-- ---- map ---------------------------------------------------------------------

local function map(args)
  local opt, pos = parse(args, { ranks = 1, disp = 1, etype = 1, filetype = 1, datarep = 1, ["datarep-file"] = 1,
                                 bytes = 1, width = 1, svg = 1 })
  if opt.help or #pos ~= 0 then
    if rank == 0 then io.write(usage.map) end
    os.exit(opt.help and 0 or 2)
  end
  load_datarep(opt)
  local n = math.tointeger(tonumber(opt.ranks or ""))
  if not n or n < 1 then die("--ranks N is needed (N >= 1)") end
  local width = math.tointeger(tonumber(opt.width or "32"))
  if not width or width < 1 then die("--width takes an integer >= 1") end
  if rank ~= 0 then return end -- one rank draws
  local views, limit = {}, 0
  for r = 0, n - 1 do
    local disp, etype, filetype, datarep = view_of(opt, r, n)
    views[r] = { disp, etype, filetype, datarep }
    limit = math.max(limit, disp + 2 * math.max(1, filetype:extent()))
  end
  local nbytes = opt.bytes and math.tointeger(tonumber(opt.bytes)) or limit
  if not nbytes or nbytes < 1 then die("--bytes takes an integer >= 1") end
  local owner = {}
  local scratch = os.tmpname()
  local fh <close> = lmpio.open(lmpio.self, scratch, "w+ delete_on_close")
  for r = 0, n - 1 do
    local v = views[r]
    fh:set_view(v[1], v[2], v[3], v[4])
    local esize = fh:get_type_extent(v[2])
    local k = 0
    while true do
      local at = fh:get_byte_offset(k)
      if at >= nbytes then break end
      for b = at, math.min(nbytes, at + esize) - 1 do
        owner[b] = owner[b] == nil and r or "*"
      end
      k = k + 1
      if v[3]:size() == 0 then break end
    end
  end
  fh:close()
  os.remove(scratch)
  local digits = "0123456789abcdefghijklmnopqrstuvwxyz"
  local function mark(b)
    local o = owner[b]
    if o == nil then return "." end
    if o == "*" then return "*" end
    return o < 36 and digits:sub(o + 1, o + 1) or "#"
  end
  local w = #tostring(nbytes)
  for row = 0, nbytes - 1, width do
    local line = {}
    for b = row, math.min(nbytes, row + width) - 1 do line[#line + 1] = mark(b) end
    io.write(("%" .. w .. "d  %s\n"):format(row, table.concat(line)))
  end
  io.write(("(%d ranks; a byte shows the rank whose view holds it, '.' none, '*' several)\n"):format(n))
  if opt.svg then
    local cell, rows = 16, (nbytes + width - 1) // width
    local f = assert(io.open(opt.svg, "w"))
    local W, Hh = width * cell + 80, rows * cell + 40
    f:write(('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="10">\n'):format(W, Hh))
    local function color(o)
      if o == nil then return "#ffffff" end
      if o == "*" then return "#000000" end
      return ("hsl(%d,70%%,60%%)"):format((o * 360 // n + (o % 2) * 180 // n) % 360)
    end
    for b = 0, nbytes - 1 do
      local x, y = 60 + (b % width) * cell, 10 + (b // width) * cell
      f:write(('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#888"><title>byte %d: %s</title></rect>\n')
        :format(x, y, cell, cell, color(owner[b]), b,
                owner[b] == nil and "no rank" or owner[b] == "*" and "several ranks" or "rank " .. owner[b]))
      if owner[b] ~= nil and owner[b] ~= "*" then
        f:write(('<text x="%d" y="%d" text-anchor="middle">%s</text>\n'):format(x + cell // 2, y + 11, mark(b)))
      end
    end
    for row = 0, rows - 1 do
      f:write(('<text x="54" y="%d" text-anchor="end">%d</text>\n'):format(10 + row * cell + 11, row * width))
    end
    f:write("</svg>\n")
    f:close()
  end
end

local commands = { dump = dump, convert = convert, map = map }
local cmd = arg[1]
if not cmd or cmd == "--help" or cmd == "-h" or cmd == "help" then
  if rank == 0 then io.write(usage.main) end
  os.exit(cmd and 0 or 2)
end
if not commands[cmd] then die(("unknown command %q (dump, convert, map; see --help)"):format(cmd)) end
commands[cmd]({ table.unpack(arg, 2) })
