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
    assert.has_error(function() u[2] = 256 end, "element 2 of a UINT8_T array: 256 is out of range (0..255)")
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
    assert.has_error(function() return kept[1] end, "buffer used after the converter returned")
    assert.has_error(function() kept[1] = 1 end, "buffer used after the converter returned")
    assert.has_error(function() return #kept end, "buffer used after the converter returned")
    assert.has_error(function() kept:tostring() end, "buffer used after the converter returned")
    assert.is_false(kept:valid())
    assert.matches("used after the converter returned", tostring(kept))
  end)

  it("read-only borrowed buffers refuse writes", function()
    lmpio._debug.borrow(function(buf)
      assert.equal(0, buf[1])
      assert.has_error(function() buf[1] = 1 end, "attempt to write to a read-only buffer")
    end, lmpio.DOUBLE, 2, true)
  end)
end)
