local H = require "spec.helper"
local lmpio = H.lmpio
local T = lmpio.type
local world, rank, size = H.world, H.rank, H.size

describe("views", function()
  after_each(H.cleanup)

  it("the default view is bytes from 0", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local disp, etype, filetype, rep = fh:get_view()
    assert.equal(0, disp)
    assert.equal(lmpio.BYTE, etype)
    assert.equal(lmpio.BYTE, filetype)
    assert.equal("native", rep)
  end)

  it("the standard's example: three complementary filetypes, offset 2 of process 1 is the 8th etype", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local disp = 100
    for p = 0, 2 do
      -- process p sees etype p of every three
      local ft = T.resized(T.hindexed({ 1 }, { p * 4 }, lmpio.INT), 0, 12)
      fh:set_view(disp, lmpio.INT, ft)
      for off = 0, 4 do
        assert.equal(disp + (3 * off + p) * 4, fh:get_byte_offset(off))
      end
    end
    local ft1 = T.resized(T.hindexed({ 1 }, { 4 }, lmpio.INT), 0, 12)
    fh:set_view(disp, lmpio.INT, ft1)
    assert.equal(disp + 7 * 4, fh:get_byte_offset(2)) -- the 8th etype after disp
  end)

  it("complementary views partition the file among all ranks", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    -- rank r owns blocks of 2 ints at block r of every size blocks
    local ft = T.resized(T.hindexed({ 2 }, { rank * 8 }, lmpio.INT), 0, size * 8)
    fh:set_view(16, lmpio.INT, ft, "native")
    local n = 6
    local a = lmpio.array(lmpio.INT, n)
    for i = 1, n do a[i] = rank * 1000 + i end
    assert.equal(n, fh:write_all(a))
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
    world:barrier()
    local whole = fh:read_at_all(16, n * 4 * size, lmpio.BYTE)
    local ints = lmpio.array(lmpio.INT, whole:tostring()):totable()
    local expect = {}
    for blk = 0, n // 2 - 1 do
      for r = 0, size - 1 do
        expect[#expect + 1] = r * 1000 + blk * 2 + 1
        expect[#expect + 1] = r * 1000 + blk * 2 + 2
      end
    end
    assert.same(expect, ints)
  end)

  it("get_view returns the view's types and datarep", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local ft = T.vector(2, 1, 3, lmpio.DOUBLE)
    fh:set_view { disp = 8 * rank, etype = lmpio.DOUBLE, filetype = ft }
    local disp, etype, filetype, rep = fh:get_view()
    assert.equal(8 * rank, disp)
    assert.equal(lmpio.DOUBLE, etype)
    assert.equal(ft:size(), filetype:size())
    assert.equal(ft:extent(), filetype:extent())
    assert.is_false(filetype:is_predefined())
    assert.equal("native", rep)
  end)

  it("set_view table form rejects a misspelt key", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local e = H.error_of(fh.set_view, fh, { dsip = 0 })
    assert.equal("MPI_ERR_ARG", e.name) -- agreed by every rank: set_view is collective
    assert.equal("bad argument #1 (unknown field 'dsip')", e.message)
  end)

  it("a noncontiguous memory type picks every other double", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local mem = lmpio.array(lmpio.DOUBLE, 8)
    for i = 1, 8 do mem[i] = rank + i / 10 end
    local every_other = T.vector(4, 1, 2, lmpio.DOUBLE)
    assert.equal(1, fh:write_at(rank * 32, mem, 1, every_other))
    world:barrier()
    local back = fh:read_at(rank * 32, 4, lmpio.DOUBLE)
    assert.same({ rank + 0.1, rank + 0.3, rank + 0.5, rank + 0.7 }, back:totable())
    -- and read back spread out again
    local spread = lmpio.array(lmpio.DOUBLE, 8)
    fh:read_at(rank * 32, spread, 1, every_other)
    assert.same({ rank + 0.1, 0, rank + 0.3, 0, rank + 0.5, 0, rank + 0.7, 0 }, spread:totable())
  end)

  it("subarray filetypes: each rank a block of rows", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local rows, cols = 2 * size, 3
    local ft = T.subarray({ rows, cols }, { 2, cols }, { 2 * rank, 0 }, lmpio.INT)
    fh:set_view(0, lmpio.INT, ft)
    local a = lmpio.array(lmpio.INT, 2 * cols)
    for i = 1, #a do a[i] = rank * 10 + i end
    fh:write_all(a)
    fh:set_view(0, lmpio.INT, lmpio.INT)
    local all = fh:read_at_all(0, rows * cols, lmpio.INT)
    local ok = true
    for r = 0, size - 1 do
      for i = 1, 2 * cols do
        if all[r * 2 * cols + i] ~= r * 10 + i then ok = false end
      end
    end
    assert.is_true(ok)
  end)

  it("external32 stores big-endian", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(rank * 8, lmpio.INT, lmpio.type.resized(lmpio.type.contiguous(2, lmpio.INT), 0, size * 8),
      "external32")
    fh:write_all(lmpio.array(lmpio.INT, { 0x01020304, rank }))
    assert.equal(4, fh:get_type_extent(lmpio.INT))
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "native")
    local b = fh:read_at_all(rank * 8, 8):tostring()
    assert.equal(string.pack(">i4>i4", 0x01020304, rank), b)
  end)
end)
