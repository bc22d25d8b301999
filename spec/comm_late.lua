-- Run by spec/comm_spec.lua as a process of its own: a __gc that runs after
-- the module finalised MPI (it was marked for finalisation before the
-- module's own exit hook, so Lua runs it after) uses communicators.  Each
-- use must raise a Lua error, not make the MPI library abort the process.
-- With the argument "os.exit" the script ends with os.exit(0, true).
local lmpio, sub
local function try(what, f, ...)
  local ok, e = pcall(f, ...)
  e = tostring(e)
  print(string.format("late %s: %s", what, ok and "no error"
    or e:find("after MPI was finalized", 1, true) and "after MPI was finalized" or e))
end
local _ = setmetatable({}, { __gc = function()
  try("barrier", lmpio.world.barrier, lmpio.world)
  try("split comm", sub.barrier, sub)
  try("rank", lmpio.world.rank, lmpio.world)
  try("bcast", lmpio.world.bcast, lmpio.world, { 1 })
  try("open", lmpio.open, lmpio.world, "/tmp/lmpio-comm-late-never-created", "w")
  try("dims_create", lmpio.dims_create, 4, 2)
  try("grid", lmpio.world.grid, lmpio.world, 2)
  print("late tostring: " .. tostring(lmpio.world))
end })
lmpio = require "lmpio"
sub = lmpio.world:split(0)
print("running on " .. lmpio.world:size())
if arg[1] == "os.exit" then os.exit(0, true) end -- closes the state: the same order
