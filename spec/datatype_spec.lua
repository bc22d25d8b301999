local H = require "spec.helper"
local lmpio = H.lmpio
local T = lmpio.type

describe("datatypes", function()
  after_each(H.cleanup)

  it("has the predefined types of the standard's table", function()
    local sizes = { CHAR = 1, SHORT = 2, INT = 4, LONG = 8, LONG_LONG_INT = 8, LONG_LONG = 8,
      SIGNED_CHAR = 1, UNSIGNED_CHAR = 1, UNSIGNED_SHORT = 2, UNSIGNED = 4, UNSIGNED_LONG = 8,
      UNSIGNED_LONG_LONG = 8, FLOAT = 4, DOUBLE = 8, WCHAR = 4, C_BOOL = 1, INT8_T = 1,
      INT16_T = 2, INT32_T = 4, INT64_T = 8, UINT8_T = 1, UINT16_T = 2, UINT32_T = 4,
      UINT64_T = 8, AINT = 8, COUNT = 8, OFFSET = 8, C_COMPLEX = 8, C_FLOAT_COMPLEX = 8,
      C_DOUBLE_COMPLEX = 16, BYTE = 1, PACKED = 1, FLOAT_INT = 8, DOUBLE_INT = 12,
      LONG_INT = 12, ["2INT"] = 8, SHORT_INT = 6, CXX_BOOL = 1 }
    for name, size in pairs(sizes) do
      assert.is_not_nil(lmpio[name], name)
      assert.equal(size, lmpio[name]:size(), name)
      assert.is_true(lmpio[name]:is_predefined())
    end
    assert.is_not_nil(lmpio.LONG_DOUBLE)
    assert.equal(lmpio.LONG_LONG, lmpio.LONG_LONG_INT)
    assert.equal("DOUBLE", lmpio.DOUBLE:name())
    assert.equal("lmpio.DOUBLE", tostring(lmpio.DOUBLE))
  end)

  it("a type whose bytes lie below the bounds MPI reports: no access writes before the buffer", function()
    -- hvector(100, 3, -1, BYTE) has its bytes at -99..2; Open MPI answers true
    -- lb 0, true extent 300, and a read into a buffer sized by that answer
    -- wrote the 99 bytes before it (found by spec/fuzz_module.lua)
    local t = T.hvector(100, 3, -1, lmpio.BYTE)
    local path = H.tmpname("below") .. "." .. H.rank
    local f <close> = lmpio.open(lmpio.self, path, "w+")
    f:write_at(0, ("abc"):rep(200))
    for _, n in ipairs({ 1, 8 }) do
      local ok, e = pcall(f.read_at, f, 0, n, t)
      assert.is_false(ok)
      assert.matches("before the start of the buffer", tostring(e))
    end
    local b = lmpio.buffer(400)
    local ok, e = pcall(f.read_at, f, 0, b, 1, t)
    assert.is_false(ok)
    assert.matches("before the start of the buffer", tostring(e))
    ok, e = pcall(f.write_at, f, 0, b, 1, t)
    assert.is_false(ok)
    assert.matches("before the start of the buffer", tostring(e))
    -- the same blocks with a forward stride: fine
    local fwd = T.hvector(100, 3, 3, lmpio.BYTE)
    local got = f:read_at(0, 1, fwd)
    assert.equal(("abc"):rep(100), got:tostring())
    f:close()
    os.remove(path)
  end)

  it("contiguous", function()
    local t = T.contiguous(3, lmpio.DOUBLE)
    assert.equal(24, t:size())
    assert.equal(24, t:extent())
    assert.equal(0, t:lb())
    assert.is_false(t:is_predefined())
    assert.is_nil(t:name())
  end)

  it("vector and hvector", function()
    local v = T.vector(3, 2, 4, lmpio.INT)
    assert.equal(24, v:size())
    assert.equal((2 * 4 + 2) * 4, v:extent())
    local h = T.hvector(3, 2, 20, lmpio.INT)
    assert.equal(24, h:size())
    assert.equal(2 * 20 + 8, h:extent())
  end)

  it("indexed, hindexed, indexed_block, hindexed_block", function()
    local i = T.indexed({ 1, 2 }, { 0, 3 }, lmpio.INT)
    assert.equal(12, i:size())
    assert.equal(20, i:extent())
    local hi = T.hindexed({ 1, 2 }, { 4, 16 }, lmpio.INT)
    assert.equal(12, hi:size())
    assert.equal(20, hi:extent())
    assert.equal(4, hi:lb())
    local ib = T.indexed_block(2, { 0, 5 }, lmpio.SHORT)
    assert.equal(8, ib:size())
    assert.equal(14, ib:extent())
    local hb = T.hindexed_block(2, { 0, 10 }, lmpio.SHORT)
    assert.equal(8, hb:size())
    assert.equal(14, hb:extent())
  end)

  it("struct", function()
    local s = T.struct({ 1, 2 }, { 0, 8 }, { lmpio.INT, lmpio.DOUBLE })
    assert.equal(20, s:size())
    assert.equal(24, s:extent())
    assert.equal(24, (s:true_extent()))
  end)

  it("subarray in C and Fortran order", function()
    local c = T.subarray({ 4, 6 }, { 2, 3 }, { 1, 2 }, lmpio.DOUBLE)
    assert.equal(6 * 8, c:size())
    assert.equal(24 * 8, c:extent())
    local ext, lb = c:true_extent()
    assert.equal((1 * 6 + 2) * 8, lb)
    assert.equal(((2 * 6 + 4) - (1 * 6 + 2) + 1) * 8, ext)
    local f = T.subarray({ 4, 6 }, { 2, 3 }, { 1, 2 }, lmpio.DOUBLE, "fortran")
    assert.equal(48, f:size())
    assert.equal((2 * 4 + 1) * 8, f:true_lb())
    -- the other spellings of both orders give the same types
    for _, o in ipairs({ "F", "f", "Fortran", "FORTRAN", lmpio.ORDER_FORTRAN }) do
      assert.equal(f:true_lb(), T.subarray({ 4, 6 }, { 2, 3 }, { 1, 2 }, lmpio.DOUBLE, o):true_lb())
    end
    for _, o in ipairs({ "C", "c", lmpio.ORDER_C }) do
      assert.equal(c:true_lb(), T.subarray({ 4, 6 }, { 2, 3 }, { 1, 2 }, lmpio.DOUBLE, o):true_lb())
    end
    local function d(o) return T.darray(2, 1, { 4, 6 }, { "block", "none" }, nil, { 2, 1 }, lmpio.DOUBLE, o):true_lb() end
    assert.equal(2 * 8, d("F"))
    assert.equal(d("fortran"), d("F"))
    assert.equal(2 * 6 * 8, d("C"))
    local ok, msg = pcall(T.subarray, { 4 }, { 2 }, { 0 }, lmpio.INT, "row")
    assert.is_false(ok)
    assert.matches('order must be "c" (or "C", row major) or "fortran" (or "F", column major), got row', msg, 1, true)
  end)

  it("darray", function()
    -- 8x8 block-distributed over a 2x2 grid: each part is 4x4
    for r = 0, 3 do
      local d = T.darray(4, r, { 8, 8 }, { "block", "block" }, nil, { 2, 2 }, lmpio.INT)
      assert.equal(16 * 4, d:size())
      assert.equal(64 * 4, d:extent())
    end
    local cyc = T.darray(2, 1, { 8 }, { "cyclic" }, { 2 }, { 2 }, lmpio.INT)
    assert.equal(4 * 4, cyc:size())
    assert.equal(2 * 4, cyc:true_lb())
  end)

  it("resized and dup", function()
    local r = T.resized(lmpio.INT, -4, 16)
    assert.equal(4, r:size())
    assert.equal(16, r:extent())
    assert.equal(-4, r:lb())
    assert.equal(12, r:ub())
    local d = T.dup(r)
    assert.equal(16, d:extent())
    local d2 = r:dup()
    assert.equal(-4, d2:lb())
  end)

  it("nests constructors", function()
    local inner = T.vector(2, 1, 2, lmpio.FLOAT)
    local outer = T.contiguous(3, T.resized(inner, 0, 16))
    assert.equal(24, outer:size())
    assert.equal(48, outer:extent())
  end)

  it("frees types when collected and on free()", function()
    for _ = 1, 100 do T.vector(4, 1, 3, lmpio.INT) end
    collectgarbage()
    collectgarbage()
    local t = T.contiguous(2, lmpio.INT)
    t:free()
    H.raises(function() t:size() end, "attempt to use a freed datatype")
    assert.matches("freed", tostring(t))
    assert.has_error(function() lmpio.INT:free() end)
  end)

  it("blocks: the bytes of a typemap as (offset, length) runs", function()
    local function blocks(t, n)
      local r = {}
      for off, len in t:blocks(n) do r[#r + 1] = { off, len } end
      return r
    end
    assert.same({ { 0, 8 }, { 16, 8 }, { 32, 8 } }, blocks(T.vector(3, 2, 4, lmpio.INT)))
    -- the last block of item 1 continues into the first of item 2
    assert.same({ { 0, 8 }, { 16, 8 }, { 32, 16 }, { 56, 8 }, { 72, 8 } },
                blocks(T.vector(3, 2, 4, lmpio.INT), 2))
    -- items of different types join; the padding of a struct splits
    assert.same({ { 0, 12 }, { 16, 12 } }, blocks(T.struct({ 1, 1 }, { 0, 8 }, { lmpio.DOUBLE, lmpio.INT }), 2))
    assert.same({ { 0, 48 } }, blocks(T.contiguous(4, lmpio.INT), 3))
    -- typemap order, not file order; negative displacements stay negative
    assert.same({ { 20, 4 }, { 0, 8 } }, blocks(T.indexed({ 1, 2 }, { 5, 0 }, lmpio.INT)))
    assert.same({ { -8, 4 } }, blocks(T.hindexed({ 1 }, { -8 }, lmpio.INT)))
    assert.same({}, blocks(lmpio.DOUBLE, 0))
    assert.same({ { 0, 80 } }, blocks(T.resized(lmpio.DOUBLE, 0, 8), 10))
    -- resized with holes: one block per item
    assert.same({ { 0, 8 }, { 16, 8 } }, blocks(T.resized(lmpio.DOUBLE, 0, 16), 2))
    -- leaving early closes the walk
    for off in T.vector(1000, 1, 2, lmpio.INT):blocks(1000) do
      if off > 0 then break end
    end
    assert.has_error(function() lmpio.INT:blocks(-1) end)
  end)

  it("rejects bad arguments with clear errors", function()
    assert.has_error(function() T.contiguous(-1, lmpio.INT) end)
    assert.has_error(function() T.contiguous(1, "INT") end)
    assert.has_error(function() T.vector(1, 1) end)
    assert.has_error(function() T.indexed({ 1, 2 }, { 0 }, lmpio.INT) end)
    assert.has_error(function() T.struct({ 1 }, { 0 }, { 42 }) end)
    assert.has_error(function() T.subarray({ 4 }, { 3 }, { 2 }, lmpio.INT) end)
    assert.has_error(function() T.subarray({ 4 }, { 2 }, { 0 }, lmpio.INT, "pascal") end)
    assert.has_error(function() T.darray(4, 0, { 8 }, { "blk" }, nil, { 4 }, lmpio.INT) end)
    assert.has_error(function() T.darray(4, 0, { 8 }, { "block" }, nil, { 3 }, lmpio.INT) end)
    assert.has_error(function() T.darray(4, 4, { 8 }, { "block" }, nil, { 4 }, lmpio.INT) end)
  end)
end)
