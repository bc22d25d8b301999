-- Run by spec/mpi_busted.sh under mpirun: leaves two files open and exits,
-- either by the end of the script (the state closes) or by os.exit without
-- closing it (arg[2] == "os.exit").  Every rank must close them at exit, in
-- opening order (a mismatch would hang), the second one deleting itself.
-- arg[3]: syncs on both files first (30: past the 16th exchange, their
-- agreements go through shared memory, freed by the close at exit).
local lmpio = require "lmpio"
local path = assert(arg[1])
local a = lmpio.open(lmpio.world, path, "w")
local b = lmpio.open(lmpio.world, path .. ".b", "w delete_on_close")
a:write_at(lmpio.world:rank(), string.char(65 + lmpio.world:rank()))
b:write_at(0, "x")
for _ = 1, tonumber(arg[3] or "") or 0 do a:sync(); b:sync() end
local _ = b
if arg[2] == "os.exit" then os.exit(0) end
