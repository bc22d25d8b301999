-- User-defined data representations written in Lua (lmpio.register_datarep),
-- lmpio.byteswap, fh:get_type_extent and views with external32 and user
-- representations.  Runs on any number of ranks; every rank registers its
-- own representations (registration is local and permanent, as in MPI), so
-- names carry the prefix "spec_dr_" and are used once per process.
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

local SMALL = { lmpio_conversion_buffer_size = "16" } -- two doubles per chunk

-- A big-endian representation written with the full form and byteswap.
local function swap_write(ub, dt, count, fb, pos)
  local s = dt:size()
  lmpio.byteswap(fb, 0, ub, pos * s, count, s)
end
local function swap_read(ub, dt, count, fb, pos)
  local s = dt:size()
  lmpio.byteswap(ub, pos * s, fb, 0, count, s)
end
local function native_extent(t) return t:size() end

local function be_doubles(t)
  local parts = {}
  for i, v in ipairs(t) do parts[i] = string.pack(">d", v) end
  return table.concat(parts)
end

-- Runs fn and returns the lmpio error object it raised.
local function lmpio_error(fn, ...)
  local e = H.error_of(fn, ...)
  assert.is_true(lmpio.iserror(e), "not an lmpio error object: " .. tostring(e))
  return e
end

describe("data representations", function()
  after_each(H.cleanup)
  it("registers once per name; bad names and specs are errors", function()
    lmpio.register_datarep("spec_dr_reg", { extent = native_extent, write = swap_write })
    local e = lmpio_error(lmpio.register_datarep, "spec_dr_reg", { extent = native_extent })
    assert.equal("MPI_ERR_DUP_DATAREP", e.name)
    assert.equal(lmpio.ERR_DUP_DATAREP, e.class)
    assert.matches('"spec_dr_reg" is already registered', e.message)
    for _, builtin in ipairs({ "native", "internal", "external32" }) do
      assert.equal("MPI_ERR_DUP_DATAREP", lmpio_error(lmpio.register_datarep, builtin, { extent = native_extent }).name)
    end
    e = lmpio_error(lmpio.register_datarep, string.rep("x", 300), { extent = native_extent })
    assert.equal("MPI_ERR_ARG", e.name)
    assert.matches("longer than MPI_MAX_DATAREP_STRING", e.message)
    assert.equal("MPI_ERR_ARG", lmpio_error(lmpio.register_datarep, "", { extent = native_extent }).name)
    -- Mistakes in the spec table are plain argument errors.
    local ok, msg = pcall(lmpio.register_datarep, "spec_dr_bad1", { extent = native_extent, reed = swap_read })
    assert.is_false(ok)
    assert.matches("bad argument #2 to '.*register_datarep' %(unknown field 'reed'%)", msg)
    assert.has_error(function() lmpio.register_datarep("spec_dr_bad2", { write = swap_write }) end)
    assert.has_error(function() lmpio.register_datarep("spec_dr_bad3", { extent = 8 }) end)
    assert.has_error(function() lmpio.register_datarep("spec_dr_bad4", { extent = native_extent, write = 1 }) end)
    assert.has_error(function()
      lmpio.register_datarep("spec_dr_bad5", { extent = native_extent, write = swap_write, encode = tostring })
    end)
    assert.has_error(function() lmpio.register_datarep("spec_dr_bad6", { formats = { NOSUCH = ">d" } }) end)
    assert.has_error(function() lmpio.register_datarep("spec_dr_bad7", { formats = { DOUBLE = ">z" } }) end)
    -- A failed registration leaves the name free.
    lmpio.register_datarep("spec_dr_bad1", { extent = native_extent })
  end)

  it("set_view with an unknown representation is MPI_ERR_UNSUPPORTED_DATAREP on every rank", function()
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    local e = lmpio_error(fh.set_view, fh, 0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_nosuch")
    assert.equal("MPI_ERR_UNSUPPORTED_DATAREP", e.name)
    assert.matches('"spec_dr_nosuch"', e.message)
    -- The view is unchanged, and the registered names and external32 work.
    local _, _, _, rep = fh:get_view()
    assert.equal("native", rep)
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "external32")
    assert.equal("external32", select(4, fh:get_view()))
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_reg")
    assert.equal("spec_dr_reg", select(4, fh:get_view()))
    fh:close()
    H.remove(path)
  end)

  it("calls the converters with count, position and exact buffers, chunk by chunk", function()
    local calls = {}
    local function record(dir)
      return function(ub, dt, count, fb, pos)
        calls[#calls + 1] = { dir = dir, count = count, pos = pos, ub = #ub, fb = #fb, fbytes = fb:nbytes(),
                              dt = dt, first = ub[pos + 1] }
        if dir == "w" then swap_write(ub, dt, count, fb, pos) else swap_read(ub, dt, count, fb, pos) end
      end
    end
    lmpio.register_datarep("spec_dr_calls", { extent = native_extent, write = record("w"), read = record("r") })
    local path = H.tmpname("dr")
    local n = 5
    local mine = {}
    for i = 1, n do mine[i] = rank * 100 + i + 0.25 end
    local fh <close> = lmpio.open(world, path, "w+", SMALL)
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_calls")
    assert.equal(n, fh:write_at_all(rank * n, lmpio.array(lmpio.DOUBLE, mine)))
    -- 16-byte staging buffer: 2 + 2 + 1 doubles, position advancing.
    assert.equal(3, #calls)
    local want = { { 2, 0 }, { 2, 2 }, { 1, 4 } }
    for i, c in ipairs(calls) do
      assert.equal("w", c.dir)
      assert.equal(want[i][1], c.count)
      assert.equal(want[i][2], c.pos)
      assert.equal(c.count * 8, c.fb)      -- filebuf: exactly this chunk
      assert.equal(c.count * 8, c.fbytes)
      assert.is_true(c.ub >= c.pos + c.count) -- userbuf covers the chunk's items
      assert.equal(lmpio.DOUBLE, c.dt)
      assert.equal(mine[c.pos + 1], c.first)
    end
    fh:sync()
    world:barrier()
    -- The file holds big-endian doubles, rank by rank.
    local all = {}
    for r = 0, size - 1 do
      for i = 1, n do all[#all + 1] = r * 100 + i + 0.25 end
    end
    assert.equal(be_doubles(all), H.slurp(path))
    calls = {}
    local got, cnt = fh:read_at_all(((rank + 1) % size) * n, n, lmpio.DOUBLE)
    assert.equal(n, cnt)
    assert.equal(3, #calls)
    for i, c in ipairs(calls) do
      assert.equal("r", c.dir)
      assert.equal(want[i][1], c.count)
      assert.equal(want[i][2], c.pos)
      assert.equal(c.count * 8, c.fb)
    end
    for i = 1, n do assert.equal(((rank + 1) % size) * 100 + i + 0.25, got[i]) end
    -- Reading past the end converts only the items that arrived.
    calls = {}
    local _, short = fh:read_at(size * n - 1, 4, lmpio.DOUBLE)
    assert.equal(1, short)
    assert.equal(1, #calls)
    assert.equal(1, calls[1].count)
    assert.equal(8, calls[1].fb)
    fh:close()
    H.remove(path)
  end)

  it("a derived memory type: positions count its predefined items, the datatype is borrowed", function()
    local seen, kept_type = {}, nil
    lmpio.register_datarep("spec_dr_derived", {
      extent = { INT = 4, BYTE = 1 },
      write = function(ub, dt, count, fb, pos)
        seen[#seen + 1] = { count = count, pos = pos, fb = #fb, named = dt:is_predefined() }
        kept_type = dt
        -- vector(2, 1, 2, INT): items 2k and 2k+1 are at bytes 16k and 16k+8.
        for i = 0, count - 1 do
          local item = pos + i
          local off = (item // 2) * 16 + (item % 2) * 8
          lmpio.byteswap(fb, 4 * i, ub, off, 1, 4)
        end
      end,
    })
    local vec = lmpio.type.vector(2, 1, 2, lmpio.INT) -- extent 12, 2 ints
    local mem = lmpio.array(lmpio.INT, { 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1 })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+", SMALL)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_derived")
    -- resized to 16 bytes so instances tile: ints 1,2 | 3,4 | 5,6 | 7,8
    local t = lmpio.type.resized(vec, 0, 16)
    fh:write_at(rank * 32, mem, 4, t)
    -- 8 ints of 4 bytes through a 16-byte buffer: 4 chunks of 4 items.
    assert.equal(2, #seen)
    assert.same({ count = 4, pos = 0, fb = 16, named = false }, seen[1])
    assert.same({ count = 4, pos = 4, fb = 16, named = false }, seen[2])
    assert.has_error(function() kept_type:size() end, "datatype used after the converter returned")
    fh:close()
    world:barrier()
    local s = H.slurp(path)
    assert.equal(string.pack(">i4>i4>i4>i4>i4>i4>i4>i4", 1, 2, 3, 4, 5, 6, 7, 8), s:sub(rank * 32 + 1, rank * 32 + 32))
    H.remove(path)
  end)

  it("an omitted converter moves native bytes in that direction", function()
    lmpio.register_datarep("spec_dr_halfnative", { extent = native_extent, read = swap_read })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_halfnative")
    local v = { rank + 0.5, rank + 1.5 }
    fh:write_at_all(rank * 2, lmpio.array(lmpio.DOUBLE, v))
    fh:sync()
    world:barrier()
    -- Written natively ...
    assert.equal(string.pack("=dd", v[1], v[2]), H.slurp(path):sub(rank * 16 + 1, rank * 16 + 16))
    -- ... and read back through the swapping reader.
    local got = fh:read_at_all(rank * 2, 2, lmpio.DOUBLE)
    assert.equal(string.pack(">dd", v[1], v[2]), got:tostring())
    fh:close()
    H.remove(path)
  end)

  local function struct_type()
    -- { int a; double b; } with its natural padding (extent 16)
    return lmpio.type.struct({ 1, 1 }, { 0, 8 }, { lmpio.INT, lmpio.DOUBLE })
  end
  local function struct_data(n)
    local b = lmpio.buffer(16 * n)
    local parts = {}
    for i = 1, n do
      parts[i] = string.pack("=i4i4d", rank * 1000 + i, 0, rank + i / 8)
    end
    b:set(1, table.concat(parts))
    return b
  end

  -- Writes n struct items per rank through rep and returns this rank's
  -- bytes of the file (after comparing them with external32).
  local function check_against_external32(rep, n)
    local t = struct_type()
    local data = struct_data(n)
    local p1, p2 = H.tmpname("dr"), H.tmpname("dr")
    local f1 <close> = lmpio.open(world, p1, "w+", SMALL)
    local f2 <close> = lmpio.open(world, p2, "w+")
    f1:set_view(0, lmpio.BYTE, lmpio.BYTE, rep)
    f2:set_view(0, lmpio.BYTE, lmpio.BYTE, "external32")
    f1:write_at_all(rank * n * 12, data, n, t)
    f2:write_at_all(rank * n * 12, data, n, t)
    f1:sync()
    f2:sync()
    world:barrier()
    local a, b = H.slurp(p1), H.slurp(p2)
    assert.equal(size * n * 12, #b)
    assert.equal(b, a)
    -- And back.
    local back = lmpio.buffer(16 * n)
    f1:read_at_all(rank * n * 12, back, n, t)
    for i = 0, n - 1 do
      assert.equal(data:tostring(16 * i + 1, 16 * i + 4), back:tostring(16 * i + 1, 16 * i + 4))
      assert.equal(data:tostring(16 * i + 9, 16 * i + 16), back:tostring(16 * i + 9, 16 * i + 16))
    end
    f1:close()
    f2:close()
    H.remove(p1)
    H.remove(p2)
  end

  it("the simple form: encode/decode of one predefined item at a time", function()
    local fmt = { INT = ">i4", DOUBLE = ">d" }
    local names = {}
    lmpio.register_datarep("spec_dr_codec", {
      extent = { INT = 4, DOUBLE = 8, BYTE = 1 },
      encode = function(tname, v)
        names[tname] = true
        return string.pack(fmt[tname], v)
      end,
      decode = function(tname, bytes) return (string.unpack(fmt[tname], bytes)) end,
    })
    check_against_external32("spec_dr_codec", 5)
    assert.same({ INT = true, DOUBLE = true }, names)
  end)

  it("the simple form: string.pack formats per type", function()
    lmpio.register_datarep("spec_dr_formats", { formats = { INT = ">i4", DOUBLE = ">d", BYTE = "B" } })
    check_against_external32("spec_dr_formats", 7)
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_formats")
    assert.equal(4, fh:get_type_extent(lmpio.INT))
    assert.equal(8, fh:get_type_extent(lmpio.DOUBLE))
    -- A type without a format has no file extent: an error, not a crash.
    local e = lmpio_error(fh.write_at, fh, 0, lmpio.array(lmpio.FLOAT, { 1 }))
    assert.is_true(e.name == "MPI_ERR_CONVERSION" or e.name == "MPI_ERR_TYPE")
    assert.matches("FLOAT", e.message)
    fh:close()
    H.remove(path)
  end)

  it("encode returning the wrong size or a non-string fails with MPI_ERR_CONVERSION", function()
    lmpio.register_datarep("spec_dr_badcodec", {
      extent = { DOUBLE = 8, INT = 4, BYTE = 1 },
      encode = function(tname, v) if tname == "INT" then return 42 end return "short" end,
      decode = function() return nil end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_badcodec")
    local e = lmpio_error(fh.write_at, fh, 0, lmpio.array(lmpio.DOUBLE, { 1 }))
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("returned 5 bytes, the file extent is 8", e.message, 1, true)
    e = lmpio_error(fh.write_at, fh, 0, lmpio.array(lmpio.INT, { 1 }))
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("returned number, not a string", e.message, 1, true)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "native")
    fh:write_at(0, lmpio.array(lmpio.DOUBLE, { 1 }))
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_badcodec")
    e = lmpio_error(fh.read_at, fh, 0, 1, lmpio.DOUBLE)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("decode for item 0 (DOUBLE) returned nil", e.message, 1, true)
    fh:close()
    H.remove(path)
  end)

  it("byteswap reverses items of any size, in place or from a string", function()
    local b = lmpio.buffer(string.pack(">i4>i4", 1, 2))
    assert.equal(b, lmpio.byteswap(b, 0, b, 0, 2, 4))
    assert.equal(string.pack("<i4<i4", 1, 2), b:tostring())
    local d = lmpio.array(lmpio.DOUBLE, 2)
    lmpio.byteswap(d, 8, string.pack(">d", 2.75), 0, 1, 8)
    assert.equal(0, d[1])
    assert.equal(2.75, d[2])
    local s = lmpio.buffer(6)
    lmpio.byteswap(s, 0, "abcdef", 0, 2, 3)
    assert.equal("cbafed", s:tostring())
    local w = lmpio.buffer(16)
    lmpio.byteswap(w, 0, "0123456789abcdef", 0, 1, 16)
    assert.equal("fedcba9876543210", w:tostring())
    lmpio.byteswap(w, 0, "xy", 0, 0, 8) -- nothing
    assert.has_error(function() lmpio.byteswap(s, 0, "0123456789", 0, 2, 4) end)     -- dst too small
    assert.has_error(function() lmpio.byteswap(s, 4, "abcdef", 0, 1, 4) end)         -- past dst end
    assert.has_error(function() lmpio.byteswap(s, 0, "abc", 1, 1, 4) end)            -- past src end
    assert.has_error(function() lmpio.byteswap(s, -1, "abcdef", 0, 1, 2) end)
    assert.has_error(function() lmpio.byteswap(s, 0, "abcdef", 0, 1, 0) end)
    assert.has_error(function() lmpio.byteswap(s, 0, s, 2, 2, 2) end)                -- overlap
    assert.has_error(function() lmpio.byteswap("abcd", 0, "abcd", 0, 1, 4) end)      -- dst is a string
  end)

  it("byteswap is fast enough for bulk data (no Lua loop)", function()
    local n = 1 << 20
    local src = lmpio.array(lmpio.DOUBLE, n)
    src[n] = 1.0
    local dst = lmpio.array(lmpio.DOUBLE, n)
    lmpio.byteswap(dst, 0, src, 0, n, 8)
    lmpio.byteswap(dst, 0, dst, 0, n, 8)
    assert.equal(1.0, dst[n])
  end)

  it("an error in a converter is MPI_ERR_CONVERSION with the Lua message on every rank", function()
    lmpio.register_datarep("spec_dr_boom", {
      extent = native_extent,
      write = function() error("boom on rank " .. rank) end,
      read = function() error({ message = "an error object" }) end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_boom")
    local e = lmpio_error(fh.write_at_all, fh, rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.equal(lmpio.ERR_CONVERSION, e.class)
    assert.matches('the write converter of representation "spec_dr_boom": .*boom on rank ' .. rank, e.message)
    -- Independent calls too, and the file stays usable.
    e = lmpio_error(fh.write_at, fh, rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    assert.matches("boom on rank " .. rank, e.message)
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "native")
    fh:write_at_all(rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_boom")
    e = lmpio_error(fh.read_at_all, fh, rank, 1, lmpio.DOUBLE)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("an error object", e.message, 1, true)
    fh:close()
    H.remove(path)
  end)

  it("a converter failing on one rank fails the collective call on every rank", function()
    lmpio.register_datarep("spec_dr_rank0", {
      extent = native_extent,
      write = function(ub, dt, count, fb, pos)
        if rank == 0 then return nil, "rank 0 refuses" end
        swap_write(ub, dt, count, fb, pos)
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_rank0")
    local e = lmpio_error(fh.write_at_all, fh, rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches('representation "spec_dr_rank0"', e.message)
    -- the converter's own words reach every rank, not only the one that failed
    assert.matches("rank 0 refuses", e.message, 1, true)
    fh:close()
    H.remove(path)
  end)

  it("a wrong return value of a converter is MPI_ERR_CONVERSION", function()
    lmpio.register_datarep("spec_dr_ret", {
      extent = native_extent,
      write = function() return 42 end,
      read = function() return false end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_ret")
    local e = lmpio_error(fh.write_at_all, fh, rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("wrong return value (a number", e.message, 1, true)
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "native")
    fh:write_at_all(rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_ret")
    e = lmpio_error(fh.read_at_all, fh, rank, 1, lmpio.DOUBLE)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("returned false", e.message, 1, true)
    fh:close()
    H.remove(path)
  end)

  it("buffers kept after the converter returned raise instead of touching freed memory", function()
    local kub, kfb
    lmpio.register_datarep("spec_dr_keep", {
      extent = native_extent,
      write = function(ub, dt, count, fb, pos)
        kub, kfb = ub, fb
        assert.is_true(ub:valid())
        assert.has_error(function() ub[1] = 0 end, "attempt to write to a read-only buffer")
        swap_write(ub, dt, count, fb, pos)
      end,
      read = function(ub, dt, count, fb, pos)
        assert.has_error(function() fb[1] = 0 end, "attempt to write to a read-only buffer")
        swap_read(ub, dt, count, fb, pos)
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_keep")
    fh:write_at_all(rank * 2, lmpio.array(lmpio.DOUBLE, { 1, 2 }))
    assert.is_false(kub:valid())
    assert.is_false(kfb:valid())
    assert.has_error(function() return kub[1] end, "buffer used after the converter returned")
    assert.has_error(function() return kfb:tostring() end, "buffer used after the converter returned")
    assert.has_error(function() lmpio.byteswap(kfb, 0, "12345678", 0, 1, 8) end,
      "buffer used after the converter returned")
    assert.same({ 1, 2 }, fh:read_at_all(rank * 2, 2, lmpio.DOUBLE):totable())
    fh:close()
    H.remove(path)
  end)

  it("yielding inside a converter is an error object, not a crash", function()
    lmpio.register_datarep("spec_dr_yield", {
      extent = native_extent,
      write = function() coroutine.yield("inside") end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_yield")
    local co = coroutine.wrap(function() return fh:write_at(rank, lmpio.array(lmpio.DOUBLE, { 1 })) end)
    local e = lmpio_error(co)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("attempt to yield across a C%-call boundary", e.message)
    -- resume: the coroutine dies with the error object; the collective call
    -- fails on every rank.
    local co2 = coroutine.create(function()
      return fh:write_at_all(rank, lmpio.array(lmpio.DOUBLE, { 1 }))
    end)
    local ok, e2 = coroutine.resume(co2)
    assert.is_false(ok)
    assert.is_true(lmpio.iserror(e2))
    assert.equal("MPI_ERR_CONVERSION", e2.name)
    assert.equal("dead", coroutine.status(co2))
    coroutine.close(co2)
    -- A converter inside a coroutine that does not yield works.
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_reg")
    local co3 = coroutine.wrap(function() return fh:write_at_all(rank, lmpio.array(lmpio.DOUBLE, { 4.5 })) end)
    assert.equal(1, co3())
    fh:close()
    H.remove(path)
  end)

  it("get_type_extent: native, external32 and a user representation", function()
    lmpio.register_datarep("spec_dr_wide", {
      extent = function(t)
        if t == lmpio.INT then return 8 end
        if t == lmpio.DOUBLE then return 16 end
        return t:size()
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    assert.equal(8, fh:get_type_extent(lmpio.DOUBLE))
    local ext_native = fh:get_type_extent(lmpio.LONG)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "external32")
    assert.equal(4, fh:get_type_extent(lmpio.LONG))
    assert.equal(16, fh:get_type_extent(lmpio.LONG_DOUBLE))
    assert.equal(4, fh:get_type_extent(lmpio.INT))
    assert.is_true(ext_native >= 4)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_wide")
    assert.equal(8, fh:get_type_extent(lmpio.INT))
    assert.equal(16, fh:get_type_extent(lmpio.DOUBLE))
    assert.equal(24, fh:get_type_extent(lmpio.type.contiguous(3, lmpio.INT)))
    -- vector(2, 1, 2, DOUBLE) is portable: rebuilt with 16-byte doubles, extent 3 * 16
    assert.equal(48, fh:get_type_extent(lmpio.type.vector(2, 1, 2, lmpio.DOUBLE)))
    fh:close()
    H.remove(path)
  end)

  it("an extent function that fails or returns a bad value is MPI_ERR_CONVERSION", function()
    lmpio.register_datarep("spec_dr_badext", {
      extent = function(t)
        if t == lmpio.INT then return "four" end
        if t == lmpio.DOUBLE then error("no extent for " .. tostring(t)) end
        return t:size()
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+")
    local e = lmpio_error(fh.set_view, fh, 0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_dr_badext")
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("no extent for lmpio.DOUBLE", e.message, 1, true)
    assert.equal("native", select(4, fh:get_view()))
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_badext")
    e = lmpio_error(fh.get_type_extent, fh, lmpio.INT)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("the extent of type INT must be a positive integer, got four", e.message, 1, true)
    fh:close()
    H.remove(path)
  end)

  it("an extent function whose answer changes: converters see the extents the core used", function()
    -- Every type is asked for once; its first answer is its file extent for
    -- good, however many types the representation meets (the binding once
    -- kept 32 and asked again for the others, handing converters a filebuf
    -- sized with the new answer: a heap overflow).
    local asked = {}
    local fbs = {}
    lmpio.register_datarep("spec_dr_fickle", {
      extent = function(t)
        local k = tostring(t)
        asked[k] = (asked[k] or 0) + 1
        return t:size() * asked[k] -- a different answer every time
      end,
      write = function(ub, dt, count, fb, pos)
        fbs[#fbs + 1] = { count = count, bytes = fb:nbytes() }
        fb:fill(0) -- the whole filebuf is this chunk's: touching all of it is allowed
        swap_write(ub, dt, count, fb, pos)
      end,
      read = function(ub, dt, count, fb, pos)
        fbs[#fbs + 1] = { count = count, bytes = fb:nbytes() }
        swap_read(ub, dt, count, fb, pos)
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+", SMALL)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_fickle")
    -- More than 32 other predefined types meet the extent function first.
    local n, seen = 0, {}
    for name, t in pairs(lmpio) do
      -- (not the pairs: DOUBLE_INT would ask for DOUBLE)
      local pair = name:match("_INT$") or name:match("^2") or name:match("^TWO_")
      if getmetatable(t) == getmetatable(lmpio.DOUBLE) and t ~= lmpio.DOUBLE and not pair and not asked[tostring(t)] then
        seen[name] = { fh:get_type_extent(t), fh:get_type_extent(t) }
        n = n + 1
      end
    end
    assert.is_true(n > 40, "only " .. n .. " predefined types")
    assert.is_nil(asked["lmpio.DOUBLE"])
    local v = {}
    for i = 1, 5 do v[i] = rank * 10 + i + 0.5 end
    fh:write_at(rank * 40, lmpio.array(lmpio.DOUBLE, v))
    fh:sync()
    world:barrier()
    -- Chunks of two 8-byte doubles (the 16-byte staging buffer), each filebuf
    -- exactly its items at the first answer, 8 bytes.
    assert.same({ { count = 2, bytes = 16 }, { count = 2, bytes = 16 }, { count = 1, bytes = 8 } }, fbs)
    assert.equal(be_doubles(v), H.slurp(path):sub(rank * 40 + 1, rank * 40 + 40))
    fbs = {}
    assert.same(v, fh:read_at(rank * 40, 5, lmpio.DOUBLE):totable())
    assert.same({ { count = 2, bytes = 16 }, { count = 2, bytes = 16 }, { count = 1, bytes = 8 } }, fbs)
    assert.equal(1, asked["lmpio.DOUBLE"])
    for name, e in pairs(seen) do assert.equal(e[1], e[2], name) end -- the same answer again
    fh:close()
    H.remove(path)
  end)

  it("the memory datatype of the call in progress cannot be freed by a converter", function()
    local t = lmpio.type.contiguous(2, lmpio.DOUBLE)
    local refused = {}
    lmpio.register_datarep("spec_dr_freetype", {
      extent = native_extent,
      write = function(ub, dt, count, fb, pos)
        local ok, msg = pcall(t.free, t)
        refused[#refused + 1] = not ok and msg or "freed"
        for i = 0, count - 1 do lmpio.byteswap(fb, 8 * i, ub, 8 * (pos + i), 1, 8) end
      end,
      read = function(ub, dt, count, fb, pos)
        t:free()
      end,
    })
    local path = H.tmpname("dr")
    local fh <close> = lmpio.open(world, path, "w+", SMALL)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "spec_dr_freetype")
    local v = {}
    for i = 1, 6 do v[i] = rank + i / 4 end
    -- three instances of two doubles, two doubles per chunk: three converter calls
    assert.equal(3, fh:write_at(rank * 48, lmpio.array(lmpio.DOUBLE, v), 3, t))
    assert.equal(3, #refused)
    for _, msg in ipairs(refused) do
      assert.matches("cannot free a datatype that a call in progress uses", msg, 1, true)
    end
    -- A converter that does not catch the refusal fails the access.
    local e = lmpio_error(fh.read_at, fh, rank * 48, lmpio.buffer(48), 3, t)
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("cannot free a datatype that a call in progress uses", e.message, 1, true)
    -- The type is intact, and can be freed once the call returned.
    assert.equal(16, t:size())
    t:free()
    assert.has_error(function() t:size() end, "attempt to use a freed datatype")
    fh:sync()
    world:barrier()
    assert.equal(be_doubles(v), H.slurp(path):sub(rank * 48 + 1, rank * 48 + 48))
    -- Nor can an extent function free the types of set_view or get_type_extent.
    local victim, got = nil, {}
    lmpio.register_datarep("spec_dr_freeview", {
      extent = function(bt)
        local ok, msg = pcall(victim.free, victim)
        got[#got + 1] = not ok and msg or "freed"
        return bt:size()
      end,
    })
    local ft = lmpio.type.contiguous(2, lmpio.DOUBLE)
    victim = ft
    fh:set_view(0, lmpio.DOUBLE, ft, "spec_dr_freeview")
    local it = lmpio.type.contiguous(3, lmpio.INT)
    victim = it
    assert.equal(12, fh:get_type_extent(it))
    assert.equal(2, #got)
    for _, msg in ipairs(got) do
      assert.matches("cannot free a datatype that a call in progress uses", msg, 1, true)
    end
    assert.equal(16, ft:size())
    assert.equal(12, it:size())
    ft:free()
    it:free()
    fh:close()
    H.remove(path)
  end)
end)
