-- Checkpoint/restart of a 3-D array with a different number of ranks.
--
--   mpirun -n 4 lua5.4 examples/checkpoint_restart.lua [path]          write with all ranks,
--                                                   restart with 2, 3 and all of them
--   mpirun -n 7 lua5.4 examples/checkpoint_restart.lua path restart    restart only (any rank count)
--
-- The checkpoint is portable: a header of four big-endian 64-bit integers
-- (magic, nx, ny, nz) and then the global nx*ny*nz array of doubles in C
-- order, stored as external32 (big-endian IEEE).  Each rank owns the block of
-- a block distribution over a balanced grid of the ranks (comm:grid,
-- lmpio.block); its view is the matching darray, so a restart with any rank
-- count reads the same file, and a rank whose block is empty (7 ranks over
-- 12 planes: ceil(12/7) = 2 planes each, the 7th rank none) takes part with
-- nothing to read.  Every value read back is checked.  Prints
-- "ok checkpoint_restart" and exits 0 when everything checks out.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()

local path, temporary = arg[1], not arg[1]
if temporary then path = world:bcast(rank == 0 and os.tmpname() or nil) end
local restart_only = arg[2] == "restart"

local MAGIC = 0x4C4D50494F434B50 -- "LMPIOCKP"
local G = { 12, 10, 6 }           -- global sizes, C order: the last varies fastest
local HEADER = 32

local function value(i, j, k) return i * 10000 + j * 100 + k + 0.25 end

local function fail(comm, what)
  io.stderr:write(string.format("checkpoint_restart: rank %d of %d: FAILED: %s\n", comm:rank(), comm:size(), what))
  lmpio.abort(1)
end

-- This rank's block of the global array on comm: first index and count per
-- dimension, and the view's filetype.
local function my_block(comm)
  local dims, coords = comm:grid(#G)
  local first, count = {}, {}
  for d = 1, #G do first[d], count[d] = lmpio.block(G[d], dims[d], coords[d]) end
  local filetype = lmpio.type.darray(comm:size(), comm:rank(), G, { "block", "block", "block" }, nil, dims,
                                     lmpio.DOUBLE)
  return first, count, filetype
end

-- Calls fn(n, i, j, k) for the block's items in file (C) order, n from 1.
local function each(first, count, fn)
  local n = 0
  for i = first[1], first[1] + count[1] - 1 do
    for j = first[2], first[2] + count[2] - 1 do
      for k = first[3], first[3] + count[3] - 1 do
        n = n + 1
        fn(n, i, j, k)
      end
    end
  end
end

local function checkpoint(comm)
  local first, count, filetype = my_block(comm)
  local a = lmpio.array(lmpio.DOUBLE, count[1] * count[2] * count[3])
  each(first, count, function(n, i, j, k) a[n] = value(i, j, k) end)
  local fh <close> = lmpio.open(comm, path, "w")
  if comm:rank() == 0 then fh:write_at(0, string.pack(">i8>i8>i8>i8", MAGIC, G[1], G[2], G[3])) end
  fh:set_view(HEADER, lmpio.DOUBLE, filetype, "external32")
  fh:write_at_all(0, a)
  fh:close()
  filetype:free()
end

-- Reads the checkpoint back on comm; returns the number of items this rank read.
local function restart(comm)
  local fh <close> = lmpio.open(comm, path, "r")
  local header = fh:read_at_all(0, HEADER):tostring()
  local magic, nx, ny, nz = string.unpack(">i8>i8>i8>i8", header)
  if magic ~= MAGIC or nx ~= G[1] or ny ~= G[2] or nz ~= G[3] then fail(comm, "bad header") end
  local first, count, filetype = my_block(comm)
  local want = count[1] * count[2] * count[3]
  fh:set_view(HEADER, lmpio.DOUBLE, filetype, "external32")
  local a, n = fh:read_at_all(0, want, lmpio.DOUBLE)
  if n ~= want then fail(comm, string.format("read %d of %d items", n, want)) end
  each(first, count, function(m, i, j, k)
    if a[m] ~= value(i, j, k) then
      fail(comm, string.format("item (%d,%d,%d) is %s, not %s", i, j, k, tostring(a[m]), tostring(value(i, j, k))))
    end
  end)
  fh:close()
  filetype:free()
  return want
end

-- Every item of the array is read exactly once by the ranks of comm.
local function restart_all(comm)
  local total = comm:allreduce(restart(comm))
  if total ~= G[1] * G[2] * G[3] then fail(comm, "the blocks cover " .. total .. " items") end
end

if not restart_only then
  checkpoint(world)
  -- Restarts on fewer ranks: the first 2, then the first 3 (the others idle).
  for _, n in ipairs({ 2, 3 }) do
    local sub = world:split(rank < n and 0 or nil)
    if sub then
      restart_all(sub)
      sub:free()
    end
    world:barrier()
  end
end
restart_all(world)
if temporary then
  world:barrier()
  if rank == 0 then os.remove(path) end
end
if rank == 0 then print("ok checkpoint_restart") end
