-- examples/checkpoint_restart.lua at rank counts that the suite does not run
-- with: written by 4 ranks, read back by 7 and by 1.  Rank 0 launches jobs
-- of their own (mpirun without the suite's environment, under timeout).
local H = require "spec.helper"
local lmpio = H.lmpio

-- Runs the example on n ranks with the given args; returns its output and
-- whether it exited with 0.
local function job(n, ...)
  local args = {}
  for i, a in ipairs { ... } do args[i] = string.format("%q", a) end
  local cmd = string.format("env -i PATH=%q LUA_CPATH_5_4=%q OMPI_ALLOW_RUN_AS_ROOT=1 "
    .. "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 100 mpirun --oversubscribe -n %d lua5.4 "
    .. "examples/checkpoint_restart.lua %s 2>&1",
    os.getenv("PATH"), os.getenv("LUA_CPATH_5_4") or "", n, table.concat(args, " "))
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  return out, ok == true
end

describe("checkpoint_restart example", function()
  after_each(H.cleanup)

  it("a checkpoint of 4 ranks restarts on 7 ranks (some own nothing) and on 1", function()
    local path = H.tmpname("ckpt")
    local res
    if H.rank == 0 then
      res = {}
      res.w, res.wok = job(4, path, "write")
      res.r7, res.r7ok = job(7, path, "read")
      res.r1, res.r1ok = job(1, path, "read")
    end
    res = lmpio.world:bcast(res)
    assert.is_true(res.wok, res.w)
    assert.matches("written by 4 ranks", res.w, 1, true)
    assert.is_true(res.r7ok, res.r7)
    assert.matches("restart on 7 ranks: every value right (5 of them owned nothing)", res.r7, 1, true)
    assert.matches("ok checkpoint_restart.lua", res.r7, 1, true)
    assert.is_true(res.r1ok, res.r1)
    assert.matches("restart on 1 ranks: every value right", res.r1, 1, true)
  end)

  it("a restart notices one wrong value", function()
    local path = H.tmpname("ckpt")
    local res
    if H.rank == 0 then
      res = {}
      res.w, res.wok = job(4, path, "write")
      -- the last double of the file, as a 7-rank restart's rank 1 reads it
      local f = assert(io.open(path, "r+b"))
      f:seek("end", -8)
      f:write(string.pack("<d", 1.5))
      f:close()
      res.r7, res.r7ok = job(7, path, "read")
    end
    res = lmpio.world:bcast(res)
    assert.is_true(res.wok, res.w)
    assert.is_false(res.r7ok, res.r7)
    assert.is_nil(res.r7:find("ok checkpoint_restart.lua", 1, true))
    assert.matches("FAILED: the restart on 7 ranks read what was written", res.r7, 1, true)
  end)
end)
