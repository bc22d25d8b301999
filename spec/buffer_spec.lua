local H = require "spec.helper"
local lmpio = H.lmpio

describe("typed arrays and byte buffers", function()
  after_each(H.cleanup)

  it("arrays of n zeroed elements, indexed from 1, with #", function()
    local a = lmpio.array(lmpio.DOUBLE, 4)
    assert.equal(4, #a)
    assert.equal(0, a[1])
    a[1], a[4] = 1.5, -2
    assert.equal(1.5, a[1])
    assert.equal(-2, a[4])
    assert.is_nil(a[0])
    assert.is_nil(a[5])
    assert.equal(32, a:nbytes())
    assert.equal(lmpio.DOUBLE, a:type())
    assert.matches("lmpio.array%(DOUBLE, 4%)", tostring(a))
  end)

  it("arrays from a table, to a table, ipairs", function()
    local a = lmpio.array(lmpio.INT, { 3, 1, 4, 1, 5 })
    assert.same({ 3, 1, 4, 1, 5 }, a:totable())
    assert.same({ 1, 4 }, a:totable(2, 3))
    local s = 0
    for _, v in ipairs(a) do s = s + v end
    assert.equal(14, s)
  end)

  it("integer types hold their range and refuse what does not fit", function()
    local u = lmpio.array(lmpio.UINT8_T, 2)
    u[1] = 255
    H.raises(function() u[2] = 256 end, "element 2 of an array of UINT8_T: 256 is out of range (0..255)")
    assert.same({ 255, 0 }, u:totable())
    local i = lmpio.array(lmpio.INT16_T, { -1, 32767 })
    assert.same({ -1, 32767 }, i:totable())
    assert.has_error(function() i[1] = 1.5 end)
    assert.has_error(function() i[1] = "x" end)
    local l = lmpio.array(lmpio.INT64_T, { math.maxinteger, math.mininteger })
    assert.same({ math.maxinteger, math.mininteger }, l:totable())
  end)

  it("floats, long doubles and booleans", function()
    local f = lmpio.array(lmpio.FLOAT, { 0.5, 3 })
    assert.same({ 0.5, 3.0 }, f:totable())
    local ld = lmpio.array(lmpio.LONG_DOUBLE, { 0.25 })
    assert.equal(0.25, ld[1])
    local b = lmpio.array(lmpio.C_BOOL, { true, false })
    assert.same({ true, false }, b:totable())
  end)

  it("raw bytes in and out", function()
    local a = lmpio.array(lmpio.INT32_T, string.pack("<i4i4", 7, -8))
    assert.same({ 7, -8 }, a:totable())
    assert.equal(string.pack("<i4", -8), a:tostring(2))
    assert.equal(8, #a:tostring())
    a:set(1, string.pack("<i4", 9))
    assert.equal(9, a[1])
    a:set(2, { 10 })
    assert.equal(10, a[2])
    assert.has_error(function() a:set(2, { 1, 2 }) end)
    assert.has_error(function() lmpio.array(lmpio.INT, "abc") end)
  end)

  it("fill", function()
    local a = lmpio.array(lmpio.SHORT, 5):fill(7)
    assert.same({ 7, 7, 7, 7, 7 }, a:totable())
  end)

  it("byte buffers", function()
    local b = lmpio.buffer(3)
    assert.equal(3, #b)
    b[1] = 65
    b[2] = 66
    b[3] = 67
    assert.equal("ABC", b:tostring())
    local c = lmpio.buffer("hello")
    assert.equal(104, c[1])
    assert.equal("ell", c:tostring(2, 4))
    assert.equal("lo", c:tostring(-2))
    assert.matches("lmpio.buffer%(5%)", tostring(c))
    assert.is_true(lmpio.isbuffer(c))
    assert.is_false(lmpio.isbuffer("hello"))
  end)

  it("out of range writes and bad keys raise", function()
    local a = lmpio.array(lmpio.INT, 2)
    assert.has_error(function() a[3] = 1 end)
    assert.has_error(function() a[0] = 1 end)
    assert.has_error(function() a.x = 1 end)
    assert.has_error(function() lmpio.array(lmpio.INT, -1) end)
    assert.has_error(function() lmpio.array("INT", 2) end)
    assert.has_error(function() lmpio.array(lmpio.type.contiguous(2, lmpio.INT), 2) end)
  end)

  it("complex and pair types hold bytes but not Lua values", function()
    local z = lmpio.array(lmpio.C_DOUBLE_COMPLEX, 2)
    assert.equal(32, z:nbytes())
    assert.has_error(function() return z[1] end)
    assert.has_error(function() z[1] = 1 end)
  end)

  it("borrowed buffers raise once invalidated", function()
    local kept
    local b, bytes = lmpio._debug.borrow(function(buf)
      assert.equal(4, #buf)
      buf[1] = 11
      buf[4] = 44
      kept = buf
    end, lmpio.INT, 4)
    assert.equal(b, kept)
    assert.equal(string.pack("=i4i4i4i4", 11, 0, 0, 44), bytes)
    H.raises(function() return kept[1] end, "buffer used after the converter returned")
    H.raises(function() kept[1] = 1 end, "buffer used after the converter returned")
    H.raises(function() return #kept end, "buffer used after the converter returned")
    H.raises(function() kept:tostring() end, "buffer used after the converter returned")
    assert.is_false(kept:valid())
    assert.matches("used after the converter returned", tostring(kept))
  end)

  it("stores are range-checked for every integer width", function()
    local cases = {
      { lmpio.INT8_T, -128, 127 }, { lmpio.INT16_T, -32768, 32767 },
      { lmpio.INT, -2147483648, 2147483647 }, { lmpio.UINT8_T, 0, 255 },
      { lmpio.UINT16_T, 0, 65535 }, { lmpio.UNSIGNED, 0, 4294967295 },
      { lmpio.UINT64_T, 0, math.maxinteger }, { lmpio.CHAR, -128, 127 },
    }
    for _, c in ipairs(cases) do
      local a = lmpio.array(c[1], 2)
      a[1], a[2] = c[2], c[3]
      assert.same({ c[2], c[3] }, a:totable())
      assert.has_error(function() a[1] = c[2] - 1 end)
      if c[3] < math.maxinteger then assert.has_error(function() a[2] = c[3] + 1 end) end
      assert.same({ c[2], c[3] }, a:totable()) -- a refused store leaves the element as it was
    end
    local i = lmpio.array(lmpio.INT, 1)
    H.raises(function() i[1] = 2 ^ 40 end,
      "element 1 of an array of INT: 1099511627776.0 is out of range (-2147483648..2147483647)")
    assert.has_error(function() i[1] = 1 << 40 end)
    H.raises(function() i[1] = 2.5 end,
      "element 1 of an array of INT needs an integer, got a number without integer value (2.5)")
    assert.has_error(function() i[1] = 0 / 0 end)
    i[1] = 3.0 -- an integral float is an integer
    assert.equal(3, i[1])
    assert.is_true(math.type(i[1]) == "integer")
    assert.has_error(function() lmpio.array(lmpio.SHORT, { 1, 70000 }) end)
    assert.has_error(function() lmpio.array(lmpio.INT, 2):fill(2 ^ 31) end)
    assert.has_error(function() lmpio.array(lmpio.INT, 2):set(1, { 1, 2 ^ 31 }) end)
    local l = lmpio.array(lmpio.INT64_T, 1)
    assert.has_error(function() l[1] = 2 ^ 63 end)
  end)

  it("an UINT64 array refuses negative numbers and reads values above maxinteger as floats", function()
    local u = lmpio.array(lmpio.UINT64_T, 3)
    H.raises(function() u[1] = -1 end,
      "element 1 of an array of UINT64_T: -1 is out of range (0..18446744073709551615)")
    assert.equal(0, u[1])
    u[1] = math.maxinteger
    u[2] = 2 ^ 63
    u[3] = 2 ^ 64 - 2 ^ 11 -- the largest double below 2^64
    assert.equal(math.maxinteger, u[1])
    assert.equal("float", math.type(u[2]))
    assert.equal(2 ^ 63, u[2])
    assert.equal(string.pack("<I8", 1 << 63), u:tostring(2, 2))
    assert.equal(string.pack("<I8", -2048), u:tostring(3, 3))
    assert.has_error(function() u[1] = 2 ^ 64 end)
  end)

  it("FLOAT takes NaN and infinities but not finite numbers beyond its range; DOUBLE takes any number", function()
    local f = lmpio.array(lmpio.FLOAT, 3)
    f[1], f[2], f[3] = 0 / 0, math.huge, -math.huge
    assert.is_true(f[1] ~= f[1])
    assert.equal(math.huge, f[2])
    assert.equal(-math.huge, f[3])
    assert.has_error(function() f[1] = 1e39 end)
    assert.has_error(function() f[1] = -1e300 end)
    f[1] = 3.4028234663852886e38 -- FLT_MAX
    assert.equal(3.4028234663852886e38, f[1])
    f[1] = 0.1 -- rounded to the nearest float
    assert.equal(string.unpack("f", string.pack("f", 0.1)), f[1])
    H.raises(function() f[1] = "x" end, "element 1 of an array of FLOAT needs a number, got string")
    local d = lmpio.array(lmpio.DOUBLE, 1)
    d[1] = 1e300
    assert.equal(1e300, d[1])
  end)

  it("sub gives a bounds-checked view that shares memory and keeps its array alive", function()
    local a = lmpio.array(lmpio.INT, { 1, 2, 3, 4, 5, 6 })
    local v = a:sub(2, 4)
    assert.equal(3, #v)
    assert.equal(12, v:nbytes())
    assert.same({ 2, 3, 4 }, v:totable())
    v[1] = 20
    a[4] = 40
    assert.same({ 1, 20, 3, 40, 5, 6 }, a:totable())
    assert.same({ 20, 3, 40 }, v:totable())
    assert.is_nil(v[4])
    assert.has_error(function() v[4] = 1 end)
    assert.same({ 5, 6 }, a:sub(-2):totable())
    assert.equal(0, #a:sub(4, 3))
    assert.same({ 3 }, v:sub(2, 2):totable()) -- a view of a view
    assert.matches("view", tostring(v))
    assert.has_error(function() a:sub(0, 2) end)
    H.raises(function() a:sub(2, 7) end, "sub(2, 7) out of bounds: the array has 6 elements")
    assert.has_error(function() a:sub(4, 2) end)
    assert.equal(lmpio.INT, v:type())
    -- the view alone keeps the memory alive
    local w = lmpio.array(lmpio.DOUBLE, 1000):fill(7):sub(10, 12)
    collectgarbage()
    collectgarbage()
    assert.same({ 7, 7, 7 }, w:totable())
  end)

  it("views of a converter's buffer become invalid with it", function()
    local view
    lmpio._debug.borrow(function(buf)
      view = buf:sub(2, 3)
      view[1] = 5
    end, lmpio.INT, 4)
    assert.is_false(view:valid())
    H.raises(function() return view[1] end, "buffer used after the converter returned")
    H.raises(function() view:tostring() end, "buffer used after the converter returned")
    local ro
    lmpio._debug.borrow(function(buf)
      ro = buf:sub(1, 1)
      H.raises(function() ro[1] = 1 end, "attempt to write to a read-only buffer")
    end, lmpio.INT, 2, true)
  end)

  it("shapes in C and Fortran order: a[{i, j, k}], get, set, index, shape", function()
    local c = lmpio.array(lmpio.DOUBLE, { shape = { 2, 3, 4 } })
    local f = lmpio.array(lmpio.DOUBLE, { shape = { 2, 3, 4 }, order = "fortran" })
    assert.equal(24, #c)
    assert.equal(24, #f)
    for i = 1, 2 do
      for j = 1, 3 do
        for k = 1, 4 do
          c[{ i, j, k }] = 100 * i + 10 * j + k
          f:set(i, j, k, 100 * i + 10 * j + k)
        end
      end
    end
    -- C: the last index is fastest; Fortran: the first
    assert.same({ 111, 112, 113, 114, 121 }, c:totable(1, 5))
    assert.same({ 111, 211, 121, 221, 131 }, f:totable(1, 5))
    assert.equal(234, c:get(2, 3, 4))
    assert.equal(234, f[{ 2, 3, 4 }])
    assert.equal(1 + (2 - 1) * 12 + (3 - 1) * 4 + (1 - 1), c:index(2, 3, 1))
    assert.equal(2 + (3 - 1) * 2 + (1 - 1) * 6, f:index(2, 3, 1))
    assert.equal(c:get(1, 2, 3), c[c:index(1, 2, 3)])
    local shape, order = c:shape()
    assert.same({ 2, 3, 4 }, shape)
    assert.equal("C", order)
    assert.equal("F", select(2, f:shape()))
    assert.same({ 24 }, lmpio.array(lmpio.INT, 24):shape())
    assert.matches("shape 2x3x4 F", tostring(f))
    for _, o in ipairs { "c", "C", "f", "F", "fortran", "Fortran" } do
      lmpio.array(lmpio.INT, { shape = { 2 }, order = o })
    end
    assert.has_error(function() lmpio.array(lmpio.INT, { shape = { 2 }, order = "row" }) end)
    assert.has_error(function() lmpio.array(lmpio.INT, { shape = { 2 }, ordre = "C" }) end)
    H.raises(function() c:get(3, 1, 1) end, "index 1 is 3, out of range 1..2")
    assert.has_error(function() return c[{ 1, 4, 1 }] end)
    assert.has_error(function() c[{ 1, 1, 5 }] = 1 end)
    H.raises(function() c:get(1, 1) end, "2 indices for an array of 3 dimensions")
    assert.equal(111, c:get(1)) -- one index: the position in storage order
  end)

  it("shapes from values and reshape views", function()
    local a = lmpio.array(lmpio.INT, { 1, 2, 3, 4, 5, 6 }, { shape = { 2, 3 } })
    assert.equal(6, a:get(2, 3))
    assert.equal(4, a:get(2, 1))
    local t = a:reshape({ 2, 3 }, "F") -- the same memory read as a Fortran 2x3
    assert.equal(5, t:get(1, 3))
    t:set(2, 3, 60)
    assert.equal(60, a[6])
    assert.has_error(function() a:reshape { 4, 2 } end)
    assert.has_error(function() lmpio.array(lmpio.INT, { 1, 2, 3 }, { shape = { 2, 2 } }) end)
    local z = lmpio.array(lmpio.INT, { shape = { 3, 0 } })
    assert.equal(0, #z)
  end)

  it("pairs, totable, fill and tostring over ranges", function()
    local a = lmpio.array(lmpio.SHORT, { 5, 6, 7, 8 })
    local seen = {}
    for i, v in pairs(a) do seen[#seen + 1] = i .. "=" .. v end
    assert.same({ "1=5", "2=6", "3=7", "4=8" }, seen)
    assert.same({ 6, 7 }, a:totable(2, 3))
    assert.same({ 7, 8 }, a:totable(-2))
    assert.same({}, a:totable(3, 2))
    assert.same({ 5, 6, 7, 8 }, a:totable(0, 10)) -- clamped as string.sub clamps
    assert.equal(a, a:fill(0, 2, 3))
    assert.same({ 5, 0, 0, 8 }, a:totable())
    a:fill(1, -1)
    assert.same({ 5, 0, 0, 1 }, a:totable())
    assert.equal(string.pack("=hh", 0, 0), a:tostring(2, 3))
    assert.equal("", a:tostring(3, 2))
    assert.equal(a:tostring(), a:tostring(-10, 10))
    local e = lmpio.array(lmpio.INT, 0)
    assert.equal(e, e:fill(1))
    for _ in pairs(e) do error("an empty array has no elements") end
    a:set(2, 9) -- one value: one element
    assert.equal(9, a[2])
    assert.has_error(function() a:set(5, 1) end)
  end)

  it("records: fields by name, array fields as views, C layout", function()
    local rt = lmpio.recordtype { { "id", lmpio.INT }, { "x", lmpio.DOUBLE }, { "flag", lmpio.C_BOOL },
      { "v", lmpio.FLOAT, 3 }, { "tag", lmpio.CHAR, 5 } }
    local r = lmpio.records(rt, 3)
    assert.equal(3, #r)
    -- offsets as a C compiler gives them: id 0, x 8, flag 16, v 20, tag 32; extent 40
    local offs = {}
    for _, f in ipairs(r:fields()) do offs[#offs + 1] = f.name .. "@" .. f.offset .. "x" .. f.count end
    assert.same({ "id@0x1", "x@8x1", "flag@16x1", "v@20x3", "tag@32x5" }, offs)
    assert.equal(40, rt:extent())
    assert.equal(4 + 8 + 1 + 12 + 5, rt:size())
    assert.equal(120, r:nbytes())
    assert.equal(rt, r:type())
    r[2].id = 7
    r[2].x = 2.5
    r[2].flag = true
    r[2].v = { 1, 2, 3 }
    r[2].v[3] = 30
    r[2].tag = "abc"
    assert.equal(7, r[2].id)
    assert.equal(2.5, r[2].x)
    assert.equal(true, r[2].flag)
    assert.same({ 1, 2, 30 }, r[2].v:totable())
    assert.equal("abc\0\0", r[2].tag:tostring())
    assert.equal(string.pack("=i4xxxxdBxxxfffc5xxx", 7, 2.5, 1, 1, 2, 30, "abc"), r:tostring(2, 2))
    assert.equal(string.rep("\0", 40), r:tostring(1, 1))
    r[3] = { x = 1.5, v = { 4, 5, 6 } } -- fields not given are zeroed
    assert.same({ id = 0, x = 1.5, flag = false, v = { 4, 5, 6 }, tag = { 0, 0, 0, 0, 0 } }, r:totable(3)[1])
    H.raises(function() r[1].nope = 1 end, "record has no field 'nope'")
    assert.has_error(function() r[1] = { idd = 1 } end)
    assert.has_error(function() r[1].id = 2 ^ 31 end)
    assert.has_error(function() r[1].v = { 1, 2 } end)
    assert.has_error(function() r[1] = { id = 1, x = "no" } end)
    assert.same({ 0, 0 }, { r[1].id, r[1].x }) -- a refused record store changes nothing
    assert.is_nil(r.id)
    assert.is_nil(r[4])
    -- views, fill, pairs and set on records
    local tail = r:sub(2)
    assert.equal(7, tail[1].id)
    r:fill({ id = 9 }, 1, 1)
    assert.equal(9, r[1].id)
    local ids = {}
    for i, rec in pairs(r) do ids[i] = rec.id end
    assert.same({ 9, 7, 0 }, ids)
    r:set(2, { { id = 20 }, { id = 30 } })
    assert.same({ 9, 20, 30 }, { r[1].id, r[2].id, r[3].id })
    local copy = lmpio.records(rt, r:tostring())
    assert.equal(r:tostring(), copy:tostring())
    local made = lmpio.records({ { "a", lmpio.SHORT }, { "b", lmpio.LONG_DOUBLE } }, { { a = 1, b = 0.5 } })
    assert.equal(0.5, made[1].b)
    assert.has_error(function() lmpio.recordtype { { "a", lmpio.INT }, { "a", lmpio.INT } } end)
    assert.has_error(function() lmpio.recordtype { { "z", lmpio.C_DOUBLE_COMPLEX } } end)
    assert.has_error(function() lmpio.records(lmpio.INT, 2) end)
  end)

  it("read-only borrowed buffers refuse writes", function()
    lmpio._debug.borrow(function(buf)
      assert.equal(0, buf[1])
      H.raises(function() buf[1] = 1 end, "attempt to write to a read-only buffer")
    end, lmpio.DOUBLE, 2, true)
  end)
end)
