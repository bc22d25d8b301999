-- What the commands of lmpio (lua/lmpio-command.lua) share: the error a
-- user caused, the options, the module (loaded on first use: --help needs
-- no MPI) and the files and views they open, named in their errors.

local common = {}

-- ---- errors -----------------------------------------------------------------

-- An error the user caused: reported as one line, without a traceback.
local Fail = {}
Fail.__index = Fail
Fail.__tostring = function(e) return e.msg end
common.Fail = Fail

local function fail(fmt, ...)
  error(setmetatable({ msg = string.format(fmt, ...) }, Fail), 0)
end
common.fail = fail

-- ---- options ----------------------------------------------------------------

-- Splits argv into positional arguments and options, checked against spec
-- (option name -> true when it takes a value, false for a flag).
function common.parse(argv, first, spec, command)
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

function common.check_positional(pos, n, command, what)
  if #pos ~= n then
    fail("%s: expected %s, got %d argument%s (see 'lmpio %s --help')", command, what, #pos,
         #pos == 1 and "" or "s", command)
  end
end

-- ---- the module ---------------------------------------------------------------

local lmpio -- loaded on first use: --help needs no MPI

function common.module()
  if not lmpio then
    local ok, m = pcall(require, "lmpio")
    if not ok then fail("cannot load the lmpio module: %s", tostring(m)) end
    lmpio = m
  end
  return lmpio
end

-- The module when a command has loaded it, else nil.
function common.loaded() return lmpio end

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
common.error_text = error_text

-- ---- files and views --------------------------------------------------------

function common.run_datarep_file(path)
  if not path then return end
  local chunk, err = loadfile(path, "t")
  if not chunk then fail("--datarep-file: %s", err) end
  local ok, e = pcall(chunk, lmpio)
  if not ok then fail("--datarep-file %s: %s", path, error_text(e)) end
end

-- Opens path on comm, naming the file in the error.
function common.open(comm, path, mode)
  local ok, fh = pcall(lmpio.open, comm, path, mode)
  if not ok then
    local msg = error_text(fh)
    if msg:find(path, 1, true) then fail("%s", msg) end
    fail("%s: %s", path, msg)
  end
  return fh
end

function common.set_view(fh, path, disp, etype, filetype, rep)
  local ok, e = pcall(fh.set_view, fh, disp, etype, filetype, rep)
  if not ok then fail("%s: cannot set the view: %s", path, error_text(e)) end
end

-- Bytes that one element of t takes in the file of fh, whose view is a
-- byte view in its representation: its items one after the other, each at
-- its file extent (no padding, no holes: the view's data stream).
function common.packed_size(fh, path, t)
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

-- .npy files (numpy's format): whether path starts with its magic, and
-- lmpio.npy.open naming the file in the error.
function common.is_npy(path)
  local f = io.open(path, "rb")
  if not f then return false end
  local magic = f:read(6)
  f:close()
  return magic == "\x93NUMPY"
end

function common.npy_open(comm, path, mode, desc)
  local ok, fh, d = pcall(lmpio.npy.open, comm, path, mode, desc)
  if not ok then
    local msg = error_text(fh)
    if msg:find(path, 1, true) then fail("%s", msg) end
    fail("%s: %s", path, msg)
  end
  return fh, d
end

return common
