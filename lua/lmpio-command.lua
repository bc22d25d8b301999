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

local usage = [[
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

-- The commands are modules, lmpio.command.X (lua/lmpio/command/X.lua),
-- looked for beside this script first (lua/ of the source tree, which
-- build/bin/lmpio runs; make install's PREFIX/share/lua/5.4 beside
-- PREFIX/bin), then on package.path (the rock's tree).  package.path
-- stays as it is: lmpio run passes it on to its programs.
local here = arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "."
local beside = here .. "/?.lua;" .. here .. "/../share/lua/5.4/?.lua"
table.insert(package.searchers, 2, function(name)
  if name:find("^lmpio%.command%.") then
    local path = package.searchpath(name, beside)
    if path then return assert(loadfile(path)), path end
  end
end)

local found, common = pcall(require, "lmpio.command.common")
if not found then
  local why = tostring(common):match("^[^\n]*"):gsub(":$", "")
  io.stderr:write("lmpio: cannot load its commands: " .. why .. " (looked in " .. beside .. " and on package.path)\n")
  os.exit(1)
end
local fail, error_text, Fail = common.fail, common.error_text, common.Fail

-- ---- main -------------------------------------------------------------------

-- Each command's module (lua/lmpio/command/X.lua) returns a table of
-- commands by name, each its usage and its main function.
local commands = { dump = "dump", convert = "convert", map = "map", run = "run",
                   ["dropin-path"] = "paths", ["doc-path"] = "paths" }

local function command(name)
  return require("lmpio.command." .. commands[name])[name]
end

local function main(argv)
  local name = argv[1]
  if name == nil then
    io.stderr:write(usage)
    os.exit(1)
  end
  if name == "--help" or name == "-h" or name == "help" then
    if argv[2] and commands[argv[2]] then return io.stdout:write(command(argv[2]).usage) end
    return io.stdout:write(usage)
  end
  if not commands[name] then fail("unknown command '%s' (commands: dump, convert, map, run, dropin-path, doc-path; see 'lmpio --help')", name) end
  return command(name).main(argv)
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
  local lmpio = common.loaded()
  if lmpio then rank, size = lmpio.world:rank(), lmpio.world:size() end
  -- Each message in one write: stderr is unbuffered, and between two writes
  -- mpirun's own lines (MPI_Abort's) may come.
  if rank == 0 or size == 1 then
    io.stderr:write("lmpio: " .. err.msg .. "\n")
    if err.bug and os.getenv("LMPIO_DEBUG") then io.stderr:write(err.bug .. "\n") end
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
      io.stderr:write("lmpio: rank " .. rank .. ": " .. err.msg .. "\n")
    end
    lmpio.abort(1)
  end
  os.exit(1)
end
