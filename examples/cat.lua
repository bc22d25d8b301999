-- A parallel cat: standard input to standard output through every rank.
-- Each step, read_ordered hands each rank the next bytes of the input in
-- rank order and write_ordered writes them back in the same order, so the
-- output is the input, byte for byte, whatever the number of ranks.
--
--   lmpio run -n 4 lua5.4 examples/cat.lua < input > output
--   cat input | lmpio run -n 4 lua5.4 examples/cat.lua | cmp - input
--
-- (`lmpio run` passes standard input and output to rank 0 itself; plain
-- `mpirun` works too, with its own forwarding.)  An optional argument is
-- the bytes each rank reads per step (default 65536).
local lmpio = require "lmpio"
local step = math.tointeger(tonumber(arg[1] or "65536")) or error("usage: cat.lua [BYTES PER STEP]")

local input <close> = lmpio.stdin()
local output <close> = lmpio.stdout()
repeat
  local data = input:read_ordered(step)
  output:write_ordered(data)
  -- a short read is the end of the input: the last rank's is the last
until lmpio.world:allreduce(#data < step, "lor")
