-- A FIFO consumer: a producer writes lines of numbers into a named pipe,
-- every rank takes whole lines of it in turn and adds them up.
--
--   mkfifo /tmp/numbers
--   seq 1 50000 > /tmp/numbers &
--   mpirun -n 4 lua5.4 examples/fifo_consumer.lua /tmp/numbers
--
-- prints "lines 50000 sum 1250025000" and how many lines each rank took.
-- Only rank 0 opens the FIFO ("rdonly sequential": a stream); the others
-- get their lines from it.
local lmpio = require "lmpio"
local world = lmpio.world
local path = assert(arg[1], "usage: fifo_consumer.lua FIFO")

local fh <close> = lmpio.open(world, path, "rdonly sequential")
local lines, sum = 0, 0
for chunk in fh:records_ordered{max = 16 * 1024} do
  for line in chunk:gmatch("[^\n]+") do
    lines = lines + 1
    sum = sum + (math.tointeger(tonumber(line)) or 0)
  end
end
local all = world:allreduce(lines)
local total = world:allreduce(sum)
local per = world:allgather(lines)
if world:rank() == 0 then
  print(("lines %d sum %d"):format(all, total))
  io.stderr:write(("lines per rank: %s\n"):format(table.concat(per, " ")))
end
