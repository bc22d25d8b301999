-- Run by spec/mpi_busted.sh under mpirun with LMPIO_HANG_REPORT=0.001:
-- starts the core's threads (the hang watchdog, in a barrier; a pooled
-- worker, for an iwrite_at) and leaves garbage behind, so that the end of
-- the script spends a while freeing it after lua_close has unloaded the C
-- modules (lmpio.so and the core's library).  The watchdog keeps waking up
-- meanwhile; the process must still end with status 0 (the code the
-- threads run stays loaded: core/src/resident.c).
local lmpio = require "lmpio"
local path = assert(arg[1])
lmpio.world:barrier()
do
  local fh <close> = lmpio.open(lmpio.world, path, "w delete_on_close")
  fh:iwrite_at(lmpio.world:rank(), "x"):wait()
end
local garbage = {}
for i = 1, tonumber(arg[2] or "") or 300000 do garbage[i] = {} end
