-- Run by spec/mpi_busted.sh under mpirun: the last rank fails in the way
-- arg[2] names while the others go on to a collective call.  The job must
-- end promptly (the failing rank aborts it) with the message printed and a
-- non-zero status, never hang.
local lmpio = require "lmpio"
local path, how = assert(arg[1]), assert(arg[2])
local world = lmpio.world
local last = world:rank() == world:size() - 1
local fh <close> = lmpio.open(world, path, "w")
if last then
  if how == "error" then
    error("boom on the last rank")
  elseif how == "argerror" then
    fh:write_at_all(0, "abcd", -1) -- uncaught argument error of a collective
  elseif how == "mpierror" then
    fh:write_at(-5, "x") -- uncaught MPI error of an independent call
  elseif how == "os.exit" then
    io.stderr:write("boom: os.exit(3) on the last rank\n")
    os.exit(3)
  end
end
fh:write_at_all(world:rank(), "a")
world:barrier()
fh:close()
