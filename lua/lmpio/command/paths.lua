-- lmpio dropin-path, lmpio doc-path: where the drop-in library and the
-- HTML reference are installed.
--
-- The files installed beside the module, found without loading it (no MPI):
-- from where the module would be loaded (package.cpath: the rock's tree,
-- or build/lua of a build, whose ../lib and ../doc hold them) and from where
-- this script is (the rock keeps it in its own directory, beside doc/;
-- make install puts it in PREFIX/bin, beside PREFIX/lib).

local common = require "lmpio.command.common"

local fail, parse, check_positional = common.fail, common.parse, common.check_positional

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

local usage = {}

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

return {
  ["dropin-path"] = { usage = usage["dropin-path"],
                      main = path_command("dropin-path", "liblmpio-mpi.so (the drop-in library)") },
  ["doc-path"] = { usage = usage["doc-path"], main = path_command("doc-path", "the HTML reference (index.html)") },
}
