-- Run by spec/mpi_busted.sh under mpirun: the last rank ends in the way
-- arg[2] names, leaving the file open, while the others go on to a
-- collective call on it.  The job must end promptly with a message naming
-- both calls (the ending rank's close at exit meets the others'
-- write_at_all), never hang:
--   end        the script's main chunk returns
--   os.exit    os.exit(0)
--   converter  os.exit(0) inside a converter of write_at_all (every rank
--              is in write_at_all; the last one leaves it)
local lmpio = require "lmpio"
local path, how = assert(arg[1]), assert(arg[2])
local world = lmpio.world
local last = world:rank() == world:size() - 1
local fh = lmpio.open(world, path, "w")
if how == "converter" then
  lmpio.register_datarep("end_one_rank", {
    extent = function(t) return t:size() end,
    write = function(ub, dt, count, fb, pos)
      if last then os.exit(0) end
      lmpio.byteswap(fb, 0, ub, pos * dt:size(), count, dt:size())
    end,
  })
  fh:set_view(0, lmpio.INT, lmpio.INT, "end_one_rank")
  fh:write_at_all(world:rank(), lmpio.array(lmpio.INT, {world:rank()}))
elseif last then
  if how == "end" then return end
  os.exit(0)
end
fh:write_at_all(world:rank(), "a")
world:barrier()
fh:close()
