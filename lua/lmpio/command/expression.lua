-- Datatypes and integers of the lmpio command's options: small Lua
-- expressions over the constructors of lmpio.type and the predefined types
-- (`vector(4, 1, 8, DOUBLE)`), evaluated with nothing else in reach and
-- within bounds.

local common = require "lmpio.command.common"

local fail = common.fail
local expression = {}

local function is_datatype(v)
  return type(v) == "userdata" and getmetatable(v) == getmetatable(common.module().INT)
end

-- The environment of an expression: the constructors of lmpio.type and the
-- predefined types by name, plus the given extra names (rank, size).
function expression.sandbox(extra)
  local lmpio = common.module()
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
      error(setmetatable({ msg = string.format("%s: evaluation stopped after %d steps (an endless loop?)", what, STEPS) }, common.Fail), 0)
    end
    if collectgarbage("count") - base > MEMORY then
      error(setmetatable({ msg = string.format("%s: evaluation stopped: the expression uses more than %d MB of memory",
                                               what, MEMORY // 1024) }, common.Fail), 0)
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
  if not ok and getmetatable(v) == common.Fail then error(v, 0) end
  if not ok then
    local msg = type(v) == "string" and v:gsub("^" .. what:gsub("%p", "%%%0") .. ":%d+: ", "") or tostring(v)
    fail("%s: '%s': %s", what, expr, msg)
  end
  return v
end

function expression.datatype(what, expr, env)
  local v = evaluate(what, expr, env)
  if not is_datatype(v) then
    fail("%s: '%s' is %s, not a datatype (types: DOUBLE, INT, BYTE, ...; constructors: vector, subarray, ...)",
         what, expr, v == nil and "nothing known" or "a " .. type(v))
  end
  return v
end

function expression.integer(what, expr, env, min)
  local v = evaluate(what, expr, env or {})
  if math.type(v) ~= "integer" and not (math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2^53) then
    fail("%s: '%s' is not an integer", what, expr)
  end
  v = math.tointeger(v)
  if min and v < min then fail("%s: %d is less than %d", what, v, min) end
  return v
end

expression.evaluate = evaluate

return expression
