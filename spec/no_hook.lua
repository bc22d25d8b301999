-- Run by spec/mpi_busted.sh under mpirun, as `lua5.4 spec/no_hook.lua OUT`
-- and `lua5.4 -l lmpio spec/no_hook.lua OUT`: telling a failed script from a
-- finished one must cost the script's own code nothing, so no debug hook
-- runs on its calls (one would make every Lua call slower in a job of
-- several ranks).  Writes "ok" or the hook found to OUT .. ".rank" .. rank.
local lmpio = require "lmpio"
local hook, mask = debug.gethook()
local co_hook = coroutine.wrap(function() return debug.gethook() end)()
local f = assert(io.open(arg[1] .. ".rank" .. lmpio.world:rank(), "w"))
f:write((hook or co_hook) and ("hook " .. tostring(hook or co_hook) .. " mask " .. tostring(mask)) or "ok", "\n")
f:close()
