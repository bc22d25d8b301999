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
  -- Every other function of the module, of lmpio.type and every method of
  -- a file, communicator, datatype and request, called directly (no name
  -- for Lua to find) with its object and nothing else: the same error,
  -- naming it, and never an abort of the process.
  local pure = { byteswap = true, wtime = true, wtick = true, same_file = true }
  local function all(where, t, self)
    local names = {}
    for name, f in pairs(t) do
      if type(f) == "function" and not pure[name] then names[#names + 1] = name end
    end
    table.sort(names)
    for _, name in ipairs(names) do
      local ok, err
      if self ~= nil then ok, err = pcall(t[name], self) else ok, err = pcall(t[name]) end
      if ok or not tostring(err):find("'" .. name .. "' called after MPI was finalized", 1, true) then
        bad[#bad + 1] = where .. name .. ": " .. tostring(err)
      end
    end
  end
  all("lmpio.", lmpio)
  all("lmpio.type.", lmpio.type)
  all("file:", getmetatable(lmpio.file_left).__index, lmpio.file_left)
  all("comm:", getmetatable(lmpio.world).__index, lmpio.world)
  all("datatype:", getmetatable(lmpio.kept_type).__index, lmpio.kept_type)
  all("request:", getmetatable(lmpio.kept_request).__index, lmpio.kept_request)
  all("msgrequest:", getmetatable(lmpio.kept_msgrequest).__index, lmpio.kept_msgrequest)
  local f = assert(io.open(out .. ".rank" .. rank, "w"))
  f:write(#bad == 0 and "ok" or table.concat(bad, "\n"))
  f:close()
end })
lmpio = require "lmpio"
rank = lmpio.world:rank()
lmpio.file_left = lmpio.open(lmpio.world, out .. ".open", "w delete_on_close")
lmpio.kept_type = lmpio.type.vector(2, 1, 2, lmpio.INT)
lmpio.kept_request = lmpio.file_left:iwrite_at(0, "y")
lmpio.kept_request:wait()
lmpio.kept_msgrequest = lmpio.world:isend("z", rank)
assert(lmpio.world:recv(rank) == "z")
lmpio.kept_msgrequest:wait()
local _ = late
