-- Lines per second into a pipe (bench/pipe_bench.sh runs it).
--   lua5.4 bench/pipe_bench.lua plain LINES           one process, io.write (the ceiling)
--   mpirun -n N lua5.4 bench/pipe_bench.lua ordered LINES BATCH
--                     every rank formats its share of the lines and writes
--                     BATCH lines per write_ordered call to lmpio.stdout()
-- Prints "RESULT <mode> ranks=<n> batch=<b> lines=<l> seconds=<s> lines_per_s=<r>"
-- on standard error (standard output is the pipe being measured).
local lmpio = require "lmpio"
local mode, lines, batch = arg[1], math.tointeger(tonumber(arg[2] or "1000000")), math.tointeger(tonumber(arg[3] or "1"))
local world = lmpio.world
local rank, size = world:rank(), world:size()
local function line(i) return ("%d\tsome text of line %d\n"):format(i, i * 7) end

world:barrier()
local t0 = lmpio.wtime()
if mode == "plain" then
  assert(size == 1, "plain runs in one process")
  local out = io.stdout
  out:setvbuf("full", 1 << 16)
  for i = 1, lines do out:write(line(i)) end
  out:flush()
else
  local out <close> = lmpio.stdout()
  -- each call writes BATCH lines per rank, the ranks' batches in rank order
  local step = batch * size
  for first = 1, lines, step do
    local buf = {}
    local a = first + rank * batch
    for i = a, math.min(lines, a + batch - 1) do buf[#buf + 1] = line(i) end
    out:write_ordered(table.concat(buf))
  end
  out:close()
end
world:barrier()
local dt = lmpio.wtime() - t0
if rank == 0 then
  io.stderr:write(("RESULT %s ranks=%d batch=%d lines=%d seconds=%.3f lines_per_s=%.0f\n")
    :format(mode, size, mode == "plain" and 0 or batch, lines, dt, lines / dt))
end
