-- Long waits name the script's line (LMPIO_HANG_REPORT, core/src/watch.c):
-- the last rank comes 2.5 s late into a file's write_at_all, then into a
-- barrier of the world; the others' reports are on standard error (checked
-- by spec/mpi_busted.sh).  Usage: lua5.4 spec/hang_report.lua PATH
local lmpio = require "lmpio"
local world = lmpio.world
local last = world:size() - 1
local function late() if world:rank() == last then os.execute("sleep 2.5") end end
local fh <close> = lmpio.open(world, arg[1], "w+")
late()
fh:write_at_all(world:rank() * 8, lmpio.array(lmpio.DOUBLE, { 1 }))
late()
world:barrier()
