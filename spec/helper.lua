-- Shared by the specs: the module, the world, and temp paths agreed over ranks.
local lmpio = require "lmpio"

local H = {}
H.lmpio = lmpio
H.world = lmpio.world
H.rank = lmpio.world:rank()
H.size = lmpio.world:size()

local base
local counter = 0
local made = {}
-- A fresh path, the same on every rank (collective).  The file does not
-- exist; it is removed by H.cleanup after the test.
function H.tmpname(tag)
  if not base then
    local b
    if H.rank == 0 then
      b = os.tmpname()
      os.remove(b)
    end
    base = H.world:bcast(b)
  end
  counter = counter + 1
  local path = string.format("%s-%s-%d", base, tag or "f", counter)
  made[#made + 1] = path
  return path
end

-- Removes every path made by H.tmpname once every rank is done with them
-- (collective: every spec file runs it in after_each, which runs on every
-- rank even when a test failed).
function H.cleanup()
  H.world:barrier()
  if H.rank == 0 then
    for _, p in ipairs(made) do os.remove(p) end
  end
  made = {}
  H.world:barrier()
end

-- Kept for readability in the specs: the path goes at cleanup.
function H.remove(path) end

-- The whole content of a file, read with plain Lua io.
function H.slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Whether the condition holds on every rank (collective).
function H.all(cond)
  return H.world:allreduce(cond and true or false, "land")
end

-- Calls fn and returns the lmpio error object it raised (or fails).
function H.error_of(fn, ...)
  local ok, e = pcall(fn, ...)
  assert(not ok, "expected an error")
  return e
end

-- Calls fn, which must raise an lmpio error object whose message is
-- message (and class cls when given); returns it.
function H.raises(fn, message, cls)
  local ok, e = pcall(fn)
  assert(not ok, "expected an error")
  assert(lmpio.iserror(e), "not an lmpio error object: " .. tostring(e))
  assert(e.message == message, ("message %q, expected %q"):format(tostring(e.message), message))
  assert(cls == nil or e.name == cls, ("class %s, expected %s"):format(e.name, tostring(cls)))
  assert(type(e.call) == "string" and type(e.where) == "string", tostring(e))
  return e
end

return H
