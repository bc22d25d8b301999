-- Reading a big-endian file of a legacy program with a `formats` representation.
--
--   mpirun --oversubscribe -n 4 lua5.4 examples/legacy_bigendian.lua [path]
--
-- The "legacy program" (rank 0, plain Lua io and string.pack, value by value)
-- writes a header of four big-endian int32s (magic, version, record count,
-- reserved) followed by its records, each a big-endian int32 id and a
-- big-endian IEEE double, 12 bytes without padding.  Every rank then reads
-- its share of the records through a view whose representation says how the
-- file stores INT and DOUBLE: the conversions run in C, and the records land
-- in memory as the C struct { int id; double value; } (16 bytes, padded).
-- Finally every rank writes its records back through the same
-- representation into a copy, which must equal the legacy file byte for byte.
-- Prints "ok legacy_bigendian" and exits 0 when everything checks out.
local lmpio = require "lmpio"

local world = lmpio.world
local rank, size = world:rank(), world:size()

local base = arg[1]
if not base then
  if rank == 0 then
    base = os.tmpname()
    os.remove(base)
  end
  base = world:bcast(base)
end
local legacy, copy = base, base .. ".copy"

local MAGIC, NREC = 0x4C454741, 1003 -- "LEGA"; not a multiple of the ranks
local HEADER = 16

local function id_of(k) return 100000 + 7 * k end
local function value_of(k) return (k - 500) * 0.125 end

-- ---- the legacy program ---------------------------------------------------------
if rank == 0 then
  local f = assert(io.open(legacy, "wb"))
  for _, v in ipairs({ MAGIC, 1, NREC, 0 }) do f:write(string.pack(">i4", v)) end
  for k = 0, NREC - 1 do
    f:write(string.pack(">i4", id_of(k)))
    f:write(string.pack(">d", value_of(k)))
  end
  f:close()
end
world:barrier()

-- ---- reading it with lmpio ------------------------------------------------------
lmpio.register_datarep("legacy-be", { formats = { INT = ">i4", DOUBLE = ">d" } })

local fh <close> = lmpio.open(world, legacy, "r")

-- The header: four INTs, 4 bytes each in this representation.
fh:set_view(0, lmpio.INT, lmpio.INT, "legacy-be")
local header = fh:read_at_all(0, 4, lmpio.INT)
assert(header[1] == MAGIC, "bad magic")
assert(header[2] == 1, "bad version")
local nrec = header[3]
assert(nrec == NREC, "bad record count")

-- This rank's records: a block of them, the first ranks one more.
local per, extra = nrec // size, nrec % size
local first = rank * per + math.min(rank, extra)
local mine = per + (rank < extra and 1 or 0)

-- A record in memory, and its size in the file (the representation's extents).
local record = lmpio.type.struct({ 1, 1 }, { 0, 8 }, { lmpio.INT, lmpio.DOUBLE })
local rec_file = fh:get_type_extent(lmpio.INT) + fh:get_type_extent(lmpio.DOUBLE)
assert(rec_file == 12)

-- The view starts at this rank's first record; etype and filetype are bytes.
fh:set_view(HEADER + first * rec_file, lmpio.BYTE, lmpio.BYTE, "legacy-be")
local recs = lmpio.buffer(16 * mine)
local _, got = fh:read_at_all(0, recs, mine, record)
assert(got == mine, "short read")

-- Check every record (native layout: int, 4 bytes of padding, double).
local raw = recs:tostring()
for i = 0, mine - 1 do
  local id, value = string.unpack("=i4", raw, 16 * i + 1), string.unpack("=d", raw, 16 * i + 9)
  local k = first + i
  if id ~= id_of(k) or value ~= value_of(k) then
    error(string.format("rank %d: record %d is (%d, %g), expected (%d, %g)", rank, k, id, value, id_of(k), value_of(k)))
  end
end
fh:close()

-- ---- and back: the same representation writes the legacy layout ---------------
local out <close> = lmpio.open(world, copy, "w+ delete_on_close")
out:set_view(0, lmpio.INT, lmpio.INT, "legacy-be")
if rank == 0 then out:write_at(0, header) end
out:set_view(HEADER + first * rec_file, lmpio.BYTE, lmpio.BYTE, "legacy-be")
out:write_at_all(0, recs, mine, record)
out:sync()
world:barrier()
local same = true
if rank == 0 then
  local function slurp(p)
    local f = assert(io.open(p, "rb"))
    local s = f:read("a")
    f:close()
    return s
  end
  local a, b = slurp(legacy), slurp(copy)
  same = a == b and #a == HEADER + NREC * 12
end
same = world:bcast(same)
out:close()
if rank == 0 then os.remove(legacy) end
if not same then
  if rank == 0 then io.stderr:write("legacy_bigendian: the copy differs from the legacy file\n") end
  os.exit(1)
end
if rank == 0 then print("ok legacy_bigendian") end
