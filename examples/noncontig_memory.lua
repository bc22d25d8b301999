-- A noncontiguous memory type: each rank keeps its part of a grid with a
-- halo of ghost cells and writes only the interior, contiguously, into its
-- part of the file; the read fills the interior of another halo array.
--   mpirun -n 4 lua5.4 examples/noncontig_memory.lua [path]
local lmpio = require "lmpio"
local T = lmpio.type

local world = lmpio.world
local rank, size = world:rank(), world:size()
local path = arg[1] or "/tmp/lmpio-noncontig.dat"

local function check(cond, what)
  if not world:allreduce(cond and true or false, "land") then
    if rank == 0 then io.stderr:write("noncontig_memory: FAILED: ", what, "\n") end
    os.exit(1)
  end
end

local nr, nc, halo = 3, 5, 1
local R, C = nr + 2 * halo, nc + 2 * halo
local interior = T.subarray({ R, C }, { nr, nc }, { halo, halo }, lmpio.DOUBLE)

local grid = lmpio.array(lmpio.DOUBLE, R * C):fill(-1)   -- ghosts hold -1
for i = 0, nr - 1 do
  for j = 0, nc - 1 do grid[(i + halo) * C + j + halo + 1] = rank * 100 + i * 10 + j end
end

local fh <close> = lmpio.open(world, path, "w+ delete_on_close")
local mybytes = nr * nc * 8
-- the memory type picks the interior; the file part is contiguous
check(fh:write_at_all(rank * mybytes, grid, 1, interior) == 1, "one interior written")

-- the file holds the interiors contiguously, in rank order
local flat, n = fh:read_at_all(rank * mybytes, nr * nc, lmpio.DOUBLE)
local ok = n == nr * nc
for i = 0, nr - 1 do
  for j = 0, nc - 1 do
    if flat[i * nc + j + 1] ~= rank * 100 + i * 10 + j then ok = false end
  end
end
check(ok, "file holds the interior contiguously")

-- read back into the interior of a fresh halo array: ghosts untouched
local back = lmpio.array(lmpio.DOUBLE, R * C):fill(-7)
fh:read_at_all(rank * mybytes, back, 1, interior)
ok = true
for i = 0, R - 1 do
  for j = 0, C - 1 do
    local inside = i >= halo and i < halo + nr and j >= halo and j < halo + nc
    local want = inside and rank * 100 + (i - halo) * 10 + (j - halo) or -7
    if back[i * C + j + 1] ~= want then ok = false end
  end
end
check(ok, "read fills only the interior")
fh:close()
if rank == 0 then
  print(string.format("%d ranks wrote the %dx%d interior of a %dx%d halo array", size, nr, nc, R, C))
  print("ok noncontig_memory.lua")
end
