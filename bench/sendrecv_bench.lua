-- bench/sendrecv_bench.lua N ITERS: comm:sendrecv of an array of N doubles
-- around a ring, received into a preallocated array (lmpio side of
-- bench/sendrecv_bench.sh; bench/sendrecv_bench.py is mpi4py's Sendrecv).
-- Prints "RESULT side=lmpio ranks=P n=N us=T", the best of 3 runs of the
-- slowest rank's mean time per call.
local lmpio = require "lmpio"
local w = lmpio.world
local rank, size = w:rank(), w:size()
local n, iters = tonumber(arg[1]) or 120, tonumber(arg[2]) or 20000
local a = lmpio.array(lmpio.DOUBLE, n):fill(rank)
local b = lmpio.array(lmpio.DOUBLE, n)
local right, left = (rank + 1) % size, (rank - 1) % size
local best = math.huge
for _ = 1, 3 do
  w:barrier()
  local t0 = lmpio.wtime()
  for _ = 1, iters do w:sendrecv(a, right, left, 0, b) end
  local t = w:allreduce((lmpio.wtime() - t0) / iters, "max")
  best = math.min(best, t)
end
assert(b[n] == left)
if rank == 0 then print(string.format("RESULT side=lmpio ranks=%d n=%d us=%.3f", size, n, best * 1e6)) end
