-- Checkpoint and restart of a 3-D array of doubles: the ranks of one job
-- write their blocks of it, and any number of ranks read it back, each its
-- own block of a grid made for that number (a rank may own nothing).
--   mpirun -n 4 lua5.4 examples/checkpoint_restart.lua [path]   write on 4, restart on 2, 3 and 4
--   mpirun -n 4 lua5.4 examples/checkpoint_restart.lua path write
--   mpirun -n 7 lua5.4 examples/checkpoint_restart.lua path read
-- The file: a 64-byte header ("LMPIOCKP", the number of dimensions and the
-- sizes, little-endian 64-bit integers), then the array in row-major order.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-checkpoint.dat"
local mode = arg[2] or "both"
local SHAPE = { 2, 12, 5 } -- grids of 3 ranks and more cut dimension 1: some own nothing
local HEADER = 64

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("checkpoint_restart: FAILED: ", what, "\n") end
    world:barrier() -- the message is out before os.exit(1) aborts the job
    os.exit(1)
  end
end

-- The value of element (i, j, k), 0-based: exact in a double.
local function value(i, j, k) return i * 10000 + j * 100 + k + 0.25 end

-- This rank's block of an array of the given shape, in a grid of comm's
-- ranks, as the file view that selects it; returns the block's subsizes,
-- starts and element count.  A rank whose block is empty gets a plain view
-- and transfers a count of zero.
local function block_view(fh, comm, shape)
  local _, _, sub, starts = comm:grid(#shape, shape)
  local n = sub[1] * sub[2] * sub[3]
  if n > 0 then
    fh:set_view(HEADER, lmpio.DOUBLE, lmpio.type.subarray(shape, sub, starts, lmpio.DOUBLE))
  else
    fh:set_view(HEADER, lmpio.DOUBLE, lmpio.DOUBLE)
  end
  return sub, starts, n
end

-- Visits the elements of a block in file order: fn(index in the block, i, j, k).
local function each(sub, starts, fn)
  local at = 0
  for i = starts[1], starts[1] + sub[1] - 1 do
    for j = starts[2], starts[2] + sub[2] - 1 do
      for k = starts[3], starts[3] + sub[3] - 1 do
        at = at + 1
        fn(at, i, j, k)
      end
    end
  end
end

local function checkpoint(comm, shape)
  local fh <close> = lmpio.open(comm, path, "w")
  if comm:rank() == 0 then
    fh:write_at(0, string.pack("<c8i8i8i8i8", "LMPIOCKP", #shape, shape[1], shape[2], shape[3])
      .. string.rep("\0", HEADER - 40))
  end
  local sub, starts, n = block_view(fh, comm, shape)
  local data = lmpio.array(lmpio.DOUBLE, n)
  each(sub, starts, function(at, i, j, k) data[at] = value(i, j, k) end)
  fh:write_all(data)
end

-- Reads the checkpoint on comm's ranks: returns whether every value of this
-- rank's block is right, and the block's element count.
local function restart(comm)
  local fh <close> = lmpio.open(comm, path, "r")
  local shape
  if comm:rank() == 0 then
    local magic, ndims, n1, n2, n3 = string.unpack("<c8i8i8i8i8", fh:read_at(0, 40):tostring())
    shape = magic == "LMPIOCKP" and ndims == 3 and { n1, n2, n3 } or false
  end
  shape = comm:bcast(shape) -- the header's sizes, to every rank
  if not shape then return false, 0 end
  local sub, starts, n = block_view(fh, comm, shape)
  local data, got = fh:read_all(n, lmpio.DOUBLE)
  local ok = got == n
  each(sub, starts, function(at, i, j, k)
    if data[at] ~= value(i, j, k) then ok = false end
  end)
  local total = comm:allreduce(n)
  return ok and total == shape[1] * shape[2] * shape[3], n
end

-- A restart on the first nranks ranks of the world (the others wait).
local function restart_on(nranks)
  local comm = world:split(rank < nranks and 0 or nil)
  local ok, n = true, 0
  if comm then
    ok, n = restart(comm)
    comm:free()
  end
  local empty = world:allreduce(comm ~= nil and n == 0 and 1 or 0)
  check(ok, string.format("the restart on %d ranks read what was written", nranks))
  if rank == 0 then
    print(string.format("restart on %d ranks: every value right (%d of them owned nothing)", nranks, empty))
  end
end

if mode == "write" or mode == "both" then
  checkpoint(world, SHAPE)
  if rank == 0 then
    print(string.format("checkpoint of a %dx%dx%d array written by %d ranks", SHAPE[1], SHAPE[2], SHAPE[3], size))
  end
end
if mode == "read" then restart_on(size) end
if mode == "both" then
  for _, n in ipairs { 2, 3, size } do
    if n <= size then restart_on(n) end
  end
end
check(mode == "write" or mode == "read" or mode == "both", "mode is write, read or both")
if rank == 0 then print("ok checkpoint_restart.lua") end
