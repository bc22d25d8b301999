-- Run by spec/mpi_busted.sh under mpirun: an object older than the module
-- is finalized after the module finalized MPI (lua_close runs finalizers
-- newest first).  Its __gc calls into the module; every call that would
-- reach MPI must raise a Lua error naming the call and MPI_Finalize, not
-- make Open MPI abort the process.  It writes "ok" or what went wrong to
-- arg[1] .. ".rank" .. rank.
local lmpio, rank
local out = assert(arg[1])
local late = setmetatable({}, { __gc = function()
  local calls = {
    open = function() return lmpio.open(lmpio.world, out .. ".late", "w") end,
    barrier = function() return lmpio.world:barrier() end,
    rank = function() return lmpio.world:rank() end,
    vector = function() return lmpio.type.vector(2, 1, 2, lmpio.INT) end,
    size = function() return lmpio.INT:size() end,
    array = function() return lmpio.array(lmpio.INT, 3) end,
    register_datarep = function() return lmpio.register_datarep("late", { formats = { INT = ">i4" } }) end,
    write_at = function() return lmpio.file_left:write_at(0, "x") end,
  }
  local bad = {}
  for name, f in pairs(calls) do
    local ok, err = pcall(f)
    if ok or not tostring(err):find("'" .. name .. "' called after MPI was finalized", 1, true) then
      bad[#bad + 1] = name .. ": " .. tostring(err)
    end
  end
  local f = assert(io.open(out .. ".rank" .. rank, "w"))
  f:write(#bad == 0 and "ok" or table.concat(bad, "\n"))
  f:close()
end })
lmpio = require "lmpio"
rank = lmpio.world:rank()
lmpio.file_left = lmpio.open(lmpio.world, out .. ".open", "w delete_on_close")
local _ = late
