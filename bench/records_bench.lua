-- records_ordered over one record much longer than a step (a file of BYTES
-- zero bytes, no separator in it, MAX bytes a rank a step):
--   LUA_CPATH_5_4="build/lua/?.so;;" mpirun -n 2 lua5.4 bench/records_bench.lua BYTES MAX [DIR]
-- Prints "RESULT records bytes=<n> max=<m> ranks=<r> steps=<s> seconds=<t>":
-- the time should grow with BYTES, not with its square.
local lmpio = require "lmpio"
local bytes, max = math.tointeger(tonumber(arg[1] or "80000")), math.tointeger(tonumber(arg[2] or "1"))
local dir = arg[3] or "/dev/shm"
local world = lmpio.world
local path = dir .. "/records_bench.dat"
local f <close> = lmpio.open(world, path, "w+")
f:set_size(bytes)
world:barrier()
local t0 = lmpio.wtime()
local got, steps = 0, 0
for rec in f:records_ordered{max = max, sep = "\n"} do
  got = got + #rec
  steps = steps + 1
end
local t = world:allreduce(lmpio.wtime() - t0, "max")
local total = world:allreduce(got, "sum")
assert(total == bytes, ("records: %d bytes of %d"):format(total, bytes))
if world:rank() == 0 then
  print(("RESULT records bytes=%d max=%d ranks=%d steps=%d seconds=%.3f"):format(bytes, max, world:size(), steps, t))
  os.remove(path)
end
