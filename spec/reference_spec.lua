-- The same sequence as spec/mpiio_ref.c, done from Lua through lmpio, must
-- give the same bytes as the MPI library's own MPI-IO (spec/mpi_busted.sh runs
-- the C program first and passes its file in LMPIO_SPEC_REF).
local H = require "spec.helper"
local lmpio = H.lmpio

describe("against the MPI library's own MPI-IO", function()
  after_each(H.cleanup)

  local ref = os.getenv("LMPIO_SPEC_REF")
  local have = H.all(ref ~= nil and io.open(ref, "rb") ~= nil)

  local function same_sequence(path)
    local size, rank = H.size, H.rank
    local fh <close> = lmpio.open(lmpio.world, path, lmpio.MODE_CREATE | lmpio.MODE_RDWR)
    fh:set_size(0)
    -- 1. interleaved ints
    fh:set_view(rank * 4, lmpio.INT, lmpio.type.resized(lmpio.INT, 0, size * 4))
    local v = lmpio.array(lmpio.INT, 5)
    for i = 1, 5 do v[i] = rank * 100 + i - 1 end
    assert.equal(5, fh:write_at_all(0, v))
    -- 2. doubles through a vector filetype, individual pointer
    local base = size * 5 * 4
    local vec = lmpio.type.vector(2, 2, 2 * size, lmpio.DOUBLE)
    fh:set_view(base + rank * 2 * 8, lmpio.DOUBLE, lmpio.type.resized(vec, 0, 4 * size * 8))
    local d = lmpio.array(lmpio.DOUBLE, 8)
    for i = 1, 8 do d[i] = rank + (i - 1) / 8 end
    fh:seek(0, "set")
    assert.equal(8, fh:write_all(d))
    -- 3. text lines in rank order
    base = base + size * 8 * 8
    fh:set_view(base, lmpio.CHAR, lmpio.CHAR)
    fh:write_ordered(string.format("rank %d of %d%s\n", rank, size, string.rep("!", rank)))
  end

  it("writes the same bytes as MPI_File_* for views, vectors and ordered text", function()
    if not have then
      pending("LMPIO_SPEC_REF not set: run through spec/mpi_busted.sh")
      return
    end
    local path = H.tmpname("ref")
    same_sequence(path)
    local same = true
    if H.rank == 0 then same = H.slurp(path) == H.slurp(ref) end
    same = H.world:bcast(same)
    H.remove(path)
    assert.is_true(same)
  end)
end)
