-- A 2-D matrix of doubles written as subarrays by one process grid and read
-- back by another (column slabs, as a darray).
--   mpirun -n 4 lua5.4 examples/matrix2d.lua [path]
local lmpio = require "lmpio"
local T = lmpio.type

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-matrix2d.dat"

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("matrix2d: FAILED: ", what, "\n") end
    os.exit(1)
  end
end

-- a px x py grid for writing (px the largest divisor of size <= sqrt(size))
local px = 1
for d = 1, size do
  if size % d == 0 and d * d <= size then px = d end
end
local py = size // px
local rows, cols = 4 * size, 6 * size
local value = function(i, j) return i * 1000 + j end   -- 0-based global indices

-- 1. write: rank (pi, pj) owns a (rows/px) x (cols/py) block
local pi, pj = rank // py, rank % py
local br, bc = rows // px, cols // py
local block = lmpio.array(lmpio.DOUBLE, br * bc)
for i = 0, br - 1 do
  for j = 0, bc - 1 do block[i * bc + j + 1] = value(pi * br + i, pj * bc + j) end
end
do
  local fh <close> = lmpio.open(world, path, "w+")
  fh:set_size(0)
  local sub = T.subarray({ rows, cols }, { br, bc }, { pi * br, pj * bc }, lmpio.DOUBLE)
  fh:set_view(0, lmpio.DOUBLE, sub)
  fh:write_all(block)
end

-- 2. read: a 1 x size grid of column slabs, described as a darray
do
  local fh <close> = lmpio.open(world, path, "r delete_on_close")
  check(fh:get_size() == rows * cols * 8, "file size")
  local slab = T.darray(size, rank, { rows, cols }, { "none", "block" }, nil, { 1, size }, lmpio.DOUBLE)
  fh:set_view(0, lmpio.DOUBLE, slab)
  local w = cols // size
  local got, n = fh:read_all(rows * w, lmpio.DOUBLE)
  local ok = n == rows * w
  for i = 0, rows - 1 do
    for j = 0, w - 1 do
      if got[i * w + j + 1] ~= value(i, rank * w + j) then ok = false end
    end
  end
  check(ok, "column slabs hold the matrix written by the block grid")
end
if rank == 0 then
  print(string.format("%dx%d matrix written by a %dx%d grid, read back by a 1x%d grid", rows, cols, px, py, size))
  print("ok matrix2d.lua")
end
