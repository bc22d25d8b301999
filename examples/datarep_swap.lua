-- A big-endian data representation written in Lua, checked against external32.
--
--   mpirun --oversubscribe -n 4 lua5.4 examples/datarep_swap.lua [path]
--
-- Every rank writes a block of doubles and a block of ints through the "swap"
-- representation (converters that reverse the bytes of each item with
-- lmpio.byteswap, in C, so no Lua loop over the data), then the same data
-- through an "external32" view into a second file.  Both files must hold the
-- same bytes, and reading back through "swap" must give the data again.
-- Prints "ok datarep_swap" and exits 0 on success, exits 1 on a mismatch.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()

-- Items position .. position+count-1 of the user's buffer (a predefined type
-- here) <-> count items in the file, each one byte-reversed.
lmpio.register_datarep("swap", {
  extent = function(t) return t:size() end,
  write = function(userbuf, datatype, count, filebuf, position)
    local n = datatype:size()
    lmpio.byteswap(filebuf, 0, userbuf, position * n, count, n)
  end,
  read = function(userbuf, datatype, count, filebuf, position)
    local n = datatype:size()
    lmpio.byteswap(userbuf, position * n, filebuf, 0, count, n)
  end,
})

local base = arg[1]
if not base then
  if rank == 0 then
    base = os.tmpname()
    os.remove(base)
  end
  base = world:bcast(base)
end
local swap_path, ext_path = base .. ".swap", base .. ".external32"

local N = 10000 -- items of each type per rank
local doubles = lmpio.array(lmpio.DOUBLE, N)
local ints = lmpio.array(lmpio.INT, N)
for i = 1, N do
  doubles[i] = rank * N + i + 0.125
  ints[i] = -(rank * N + i)
end
-- File layout: all ranks' doubles, then all ranks' ints.
local dbytes = size * N * 8

local function write_file(path, rep)
  -- A small staging buffer so the converters run many times per call.
  local fh <close> = lmpio.open(world, path, "w+", { lmpio_conversion_buffer_size = "4096" })
  fh:set_view(0, lmpio.BYTE, lmpio.BYTE, rep)
  fh:write_at_all(rank * N * 8, doubles)
  fh:write_at_all(dbytes + rank * N * 4, ints)
  fh:close()
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

write_file(swap_path, "swap")
write_file(ext_path, "external32")
world:barrier()

local ok, why = true, nil
local a, b = slurp(swap_path), slurp(ext_path)
if #a ~= size * N * 12 then
  ok, why = false, string.format("swap file has %d bytes, expected %d", #a, size * N * 12)
elseif a ~= b then
  ok, why = false, "swap and external32 files differ"
elseif string.unpack(">d", a, rank * N * 8 + 1) ~= doubles[1] then
  ok, why = false, "first double is not big-endian"
end

-- And back through the Lua representation.
if ok then
  local fh <close> = lmpio.open(world, swap_path, "r", { lmpio_conversion_buffer_size = "4096" })
  fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "swap")
  local d = fh:read_at_all(rank * N * 8, N, lmpio.DOUBLE)
  local i = fh:read_at_all(dbytes + rank * N * 4, N, lmpio.INT)
  fh:close()
  if d:tostring() ~= doubles:tostring() or i:tostring() ~= ints:tostring() then
    ok, why = false, "data read back through swap differs"
  end
end

local all_ok = world:allreduce(ok, "land")
world:barrier()
if rank == 0 then -- the two files are ours, whatever base was given
  os.remove(swap_path)
  os.remove(ext_path)
end
if not ok then io.stderr:write(string.format("rank %d: %s\n", rank, why)) end
if not all_ok then os.exit(1) end
if rank == 0 then print("ok datarep_swap") end
