-- Ranks in different blocking calls that nothing can match: each reports
-- its own (LMPIO_HANG_REPORT), and spec/hang_test.sh ends the job once the
-- reports are in.  Usage: mpirun -n 2 lua5.4 spec/hang_mismatch.lua PATH HOW
--   file:    rank 0 in fh:write_at_all on a file of a duplicate of the
--            world (no agreement of the world's sees it), the others in
--            world:barrier()
--   message: rank 0 in world:allreduce, the others in world:recv(0)
--   never:   the last rank in world:recv(0) of a message never sent (the
--            others end their script)
local lmpio = require "lmpio"
local world = lmpio.world
local rank, last = world:rank(), world:size() - 1
local path, how = arg[1], arg[2]
if how == "file" then
  local comm = world:dup()
  local fh = lmpio.open(comm, path, "w+")
  if rank == 0 then
    fh:write_at_all(0, lmpio.array(lmpio.DOUBLE, { 1 })) -- (file: rank 0 waits here)
  else
    world:barrier() -- (file: the others wait here)
  end
elseif how == "message" then
  if rank == 0 then
    world:allreduce(1) -- (message: rank 0 waits here)
  else
    world:recv(0) -- (message: the others wait here)
  end
elseif how == "never" then
  if rank == last then
    world:recv(0, 7) -- (never: the last rank waits here)
  end
end
