-- Bulk operations on arrays (lua/array_ops.c): sum, min, max, minmax,
-- histogram and chunks, each checked against a plain Lua loop over a[i].
local H = require "spec.helper"
local lmpio = H.lmpio

-- Lua's own answers, from a loop over elements i..j.
local function lua_sum(a, i, j)
  local s = 0
  for k = i or 1, j or #a do s = s + a[k] end
  return s
end

local function lua_minmax(a)
  local lo, hi = a[1], a[1]
  for k = 2, #a do
    lo = math.min(lo, a[k])
    hi = math.max(hi, a[k])
  end
  return lo, hi
end

local function lua_histogram(a, lo, hi, nbins)
  local c = {}
  for k = 1, nbins do c[k] = 0 end
  for k = 1, #a do
    local x = a[k]
    if x >= lo and x < hi then
      local b = math.floor((x - lo) * nbins / (hi - lo)) + 1
      c[b] = c[b] + 1
    end
  end
  return c
end

local function random_doubles(n, seed)
  math.randomseed(seed)
  local a = lmpio.array(lmpio.DOUBLE, n)
  for i = 1, n do a[i] = (math.random() - 0.3) * 1000 end
  return a
end

describe("array:sum", function()
  it("sums doubles as a Lua loop does, to rounding", function()
    for _, n in ipairs { 0, 1, 7, 8, 9, 127, 128, 129, 1000, 100003 } do
      local a = random_doubles(n, n)
      local want = lua_sum(a)
      assert.is_true(math.abs(a:sum() - want) <= 1e-9 * math.max(1, math.abs(want)), n)
      assert.equal("float", math.type(a:sum()))
    end
  end)

  it("takes a range clamped as tostring's, negative from the end", function()
    local a = lmpio.array(lmpio.INT, { 1, 2, 3, 4, 5 })
    assert.equal(15, a:sum())
    assert.equal(9, a:sum(2, 4))
    assert.equal(12, a:sum(3))
    assert.equal(9, a:sum(-2))
    assert.equal(15, a:sum(-100, 100))
    assert.equal(0, a:sum(4, 2))
    assert.equal("integer", math.type(a:sum(4, 2)))
    assert.equal(0.0, lmpio.array(lmpio.DOUBLE, 0):sum())
    assert.equal("float", math.type(lmpio.array(lmpio.FLOAT, 0):sum()))
    assert.equal(a:sub(2, 4):sum(), a:sum(2, 4))
  end)

  it("sums every integer type to an integer, and wraps as Lua integers do", function()
    for _, t in ipairs { "CHAR", "SIGNED_CHAR", "SHORT", "INT", "LONG", "LONG_LONG", "INT8_T", "INT16_T",
                         "INT32_T", "INT64_T" } do
      local a = lmpio.array(lmpio[t], { -3, 1, 2, 100, -100, 7 })
      assert.equal(7, a:sum(), t)
      assert.equal("integer", math.type(a:sum()), t)
    end
    for _, t in ipairs { "UNSIGNED_CHAR", "UNSIGNED_SHORT", "UNSIGNED", "UNSIGNED_LONG", "UINT8_T",
                         "UINT16_T", "UINT32_T", "UINT64_T", "BYTE" } do
      local a = lmpio.array(lmpio[t], { 3, 1, 2, 200, 0, 7 })
      assert.equal(213, a:sum(), t)
    end
    local big = lmpio.array(lmpio.INT64_T, { math.maxinteger, 1 })
    assert.equal(math.maxinteger + 1, big:sum()) -- wraps to mininteger, as in Lua
    local u8 = lmpio.array(lmpio.UINT8_T, 1000):fill(255)
    assert.equal(255000, u8:sum()) -- no overflow of the element type
  end)

  it("sums floats in double, long doubles, and counts true booleans", function()
    local f = lmpio.array(lmpio.FLOAT, { 0.5, 0.25, 3e38, 3e38 })
    assert.is_true(math.abs(f:sum() - 6e38) < 1e32) -- beyond FLT_MAX: summed in double
    local ld = lmpio.array(lmpio.LONG_DOUBLE, { 1.5, 2.5, -1 })
    assert.equal(3.0, ld:sum())
    local b = lmpio.array(lmpio.C_BOOL, { true, false, true, true })
    assert.equal(3, b:sum())
  end)

  it("is accurate where a running sum is not (pairwise)", function()
    local n = 1000000
    local a = lmpio.array(lmpio.DOUBLE, n):fill(0.1)
    -- the running sum of a million 0.1 is off by about 1e-6
    assert.is_true(math.abs(a:sum() - 100000) < 1e-8)
    local f = lmpio.array(lmpio.FLOAT, { 2 ^ 24, 1, 1, 1, 1 })
    assert.equal(2 ^ 24 + 4, f:sum()) -- in float, 2^24 + 1 is 2^24
  end)

  it("refuses records and complex numbers", function()
    local r = lmpio.records({ { "x", lmpio.DOUBLE } }, 3)
    assert.has_error(function() r:sum() end)
    assert.has_error(function() lmpio.array(lmpio.C_DOUBLE_COMPLEX, 2):sum() end)
    assert.has_error(function() lmpio.array(lmpio.C_DOUBLE_COMPLEX, 2):min() end)
  end)
end)

describe("array:min, array:max, array:minmax", function()
  it("agree with a Lua loop", function()
    for _, n in ipairs { 1, 2, 9, 1000 } do
      local a = random_doubles(n, 7 * n)
      local lo, hi = lua_minmax(a)
      assert.equal(lo, a:min())
      assert.equal(hi, a:max())
      local l2, h2 = a:minmax()
      assert.equal(lo, l2)
      assert.equal(hi, h2)
    end
  end)

  it("find the extremes at every position (each lane and the tail)", function()
    for n = 1, 11 do
      for at = 1, n do
        local a = lmpio.array(lmpio.DOUBLE, n):fill(5)
        a[at] = -1
        a[at % n + 1] = 9 -- the next one, or the same when n is 1
        assert.same({ n == 1 and 9 or -1, 9 }, { a:minmax() }, n .. " " .. at)
        local i = lmpio.array(lmpio.INT, n):fill(5)
        i[at] = 7
        assert.same({ n == 1 and 7 or 5, 7 }, { i:minmax() })
      end
    end
  end)

  it("give integers for integer arrays, nil for an empty range, and take ranges", function()
    local a = lmpio.array(lmpio.SHORT, { 5, -7, 3, 9, 0 })
    assert.equal(-7, a:min())
    assert.equal(9, a:max())
    assert.equal("integer", math.type(a:min()))
    assert.same({ 0, 9 }, { a:minmax(4) })
    assert.same({ -7, 3 }, { a:minmax(2, 3) })
    assert.is_nil(a:min(3, 2))
    local lo, hi = lmpio.array(lmpio.INT, 0):minmax()
    assert.is_nil(lo)
    assert.is_nil(hi)
    local u = lmpio.array(lmpio.UINT64_T, { 1, 2 ^ 63 })
    assert.equal(2.0 ^ 63, u:max()) -- as u[2] reads it
    assert.equal(1, u:min())
    local i8 = lmpio.array(lmpio.INT8_T, { -128, 127 })
    assert.same({ -128, 127 }, { i8:minmax() })
  end)

  it("NaN makes min and max NaN; infinities are ordered", function()
    local a = lmpio.array(lmpio.DOUBLE, { 1, 0 / 0, -5 })
    assert.is_true(a:min() ~= a:min())
    assert.is_true(a:max() ~= a:max())
    local first = lmpio.array(lmpio.FLOAT, { 0 / 0, 2 })
    assert.is_true(first:max() ~= first:max())
    local inf = lmpio.array(lmpio.DOUBLE, { 1, math.huge, -math.huge })
    assert.same({ -math.huge, math.huge }, { inf:minmax() })
  end)

  it("booleans: min is all, max is any", function()
    local b = lmpio.array(lmpio.C_BOOL, { true, false, true })
    assert.is_false(b:min())
    assert.is_true(b:max())
    assert.is_true(b:min(3))
  end)
end)

describe("array:histogram", function()
  it("counts as a Lua loop counts, into an INT64_T array", function()
    local a = random_doubles(20000, 3)
    for _, case in ipairs { { -300, 700, 66 }, { 0, 1, 1 }, { -100, 100, 7 }, { -1000, 1000, 5000 } } do
      local lo, hi, nb = case[1], case[2], case[3]
      local c = a:histogram(lo, hi, nb)
      assert.equal(lmpio.INT64_T, c:type())
      assert.equal(nb, #c)
      assert.same(lua_histogram(a, lo, hi, nb), c:totable())
    end
  end)

  it("puts values on the edges in the bin they open; hi and outside are not counted", function()
    local a = lmpio.array(lmpio.INT, { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, 11 })
    assert.same({ 2, 2, 2, 2, 2 }, a:histogram(0, 10, 5):totable())
    local d = lmpio.array(lmpio.DOUBLE, { 0.1, 0.2, 0.3, 0.7, 0.9999999, 1.0, 0 / 0, -math.huge, math.huge })
    assert.same(lua_histogram(lmpio.array(lmpio.DOUBLE, { 0.1, 0.2, 0.3, 0.7, 0.9999999 }), 0, 1, 10),
                d:histogram(0, 1, 10):totable())
    assert.equal(5, d:histogram(0, 1, 10):sum())
  end)

  it("is right for every finite input, up to the whole range of a double", function()
    -- issue 32: (x - lo) * nbins overflowed to infinity and counted 2 0
    local big = lmpio.array(lmpio.DOUBLE, { 1.6e308, 1.0e308 })
    assert.same({ 0, 2 }, big:histogram(0, 1.7e308, 2):totable())
    -- hi - lo itself beyond a double: every bin still gets its own
    local wide = lmpio.array(lmpio.DOUBLE, { -1.7e308, -1e308, 0, 1e308, 1.7e308, -math.huge, math.huge, 0 / 0 })
    assert.same({ 2, 2 }, wide:histogram(-1.7e308, 1.7e308, 2):totable())
    assert.same({ 2, 0, 1, 1 }, wide:histogram(-1.7e308, 1.7e308, 4):totable())
    -- many bins over a huge range: bin = floor(x / width)
    local n = 1 << 20
    local c = lmpio.array(lmpio.DOUBLE, { 1.5e308, 0.5e308 }):histogram(0, 1.6e308, n)
    assert.equal(2, c:sum())
    assert.equal(1, c[math.floor(1.5e308 / 1.6e308 * n) + 1])
    assert.equal(1, c[math.floor(0.5e308 / 1.6e308 * n) + 1])
  end)

  it("adds to the counts given, so that pieces can be counted one by one", function()
    local a = random_doubles(1000, 11)
    local c = lmpio.array(lmpio.INT64_T, 10)
    assert.equal(c, a:sub(1, 400):histogram(-300, 700, 10, c))
    a:sub(401):histogram(-300, 700, 10, c)
    assert.same(a:histogram(-300, 700, 10):totable(), c:totable())
    assert.equal(1000, c:sum())
  end)

  it("bins every numeric type", function()
    for _, t in ipairs { "INT8_T", "UINT16_T", "INT", "UINT64_T", "FLOAT", "LONG_DOUBLE", "BYTE" } do
      local a = lmpio.array(lmpio[t], { 1, 2, 3, 4, 100 })
      assert.same({ 1, 1, 1, 1 }, a:histogram(1, 5, 4):totable(), t)
    end
  end)

  it("refuses bad edges, bin counts and count arrays", function()
    local a = lmpio.array(lmpio.DOUBLE, 4)
    assert.has_error(function() a:histogram(1, 1, 4) end)
    assert.has_error(function() a:histogram(2, 1, 4) end)
    assert.has_error(function() a:histogram(0, math.huge, 4) end)
    assert.has_error(function() a:histogram(-math.huge, 0, 4) end)
    assert.has_error(function() a:histogram(0 / 0, 1, 4) end)
    assert.has_error(function() a:histogram(0, 1, 0) end)
    assert.has_error(function() a:histogram(0, 1, 4, lmpio.array(lmpio.INT, 4)) end)
    assert.has_error(function() a:histogram(0, 1, 4, lmpio.array(lmpio.INT64_T, 3)) end)
    assert.has_error(function() lmpio.array(lmpio.C_BOOL, 2):histogram(0, 1, 4) end)
  end)
end)

describe("array:chunks", function()
  it("visits every element once, in order, in pieces of the size asked", function()
    for _, n in ipairs { 0, 1, 4095, 4096, 4097, 10000 } do
      local a = random_doubles(n, n + 1)
      local seen, pieces = 0, 0
      for first, t, m in a:chunks() do
        assert.equal(seen + 1, first)
        assert.equal(m, #t)
        assert.is_true(m >= 1 and m <= 4096)
        for k = 1, m do assert.equal(a[first + k - 1], t[k]) end
        seen = seen + m
        pieces = pieces + 1
      end
      assert.equal(n, seen)
      assert.equal((n + 4095) // 4096, pieces)
    end
  end)

  it("takes a piece size, reads every readable type, and writes back with set", function()
    local a = lmpio.array(lmpio.INT16_T, { 1, 2, 3, 4, 5, 6, 7 })
    local sizes = {}
    for first, t, n in a:chunks(3) do
      sizes[#sizes + 1] = n
      for k = 1, n do t[k] = t[k] * 10 end
      a:set(first, t)
    end
    assert.same({ 3, 3, 1 }, sizes)
    assert.same({ 10, 20, 30, 40, 50, 60, 70 }, a:totable())
    local b = lmpio.array(lmpio.C_BOOL, { true, false })
    for _, t in b:chunks() do assert.same({ true, false }, t) end
    assert.has_error(function() a:chunks(0) end)
    assert.has_error(function() lmpio.records({ { "x", lmpio.INT } }, 2):chunks() end)
  end)
end)

describe("a[i] and a[i] = v", function()
  it("read and write doubles and other types as before (the fast path)", function()
    local a = lmpio.array(lmpio.DOUBLE, 3)
    a[1], a[3] = 1.5, -2
    assert.same({ 1.5, 0, -2 }, a:totable())
    assert.is_nil(a[0])
    assert.is_nil(a[4])
    assert.equal(1.5, a[1.0])
    assert.is_nil(a[1.5])
    assert.has_error(function() a[4] = 1 end)
    assert.has_error(function() a[1] = "x" end)
    local i = lmpio.array(lmpio.INT8_T, 2)
    i[2] = 7
    assert.equal(7, i[2])
    assert.has_error(function() i[1] = 200 end)
    -- the metamethods check their object
    local index = getmetatable(a).__index
    assert.has_error(function() index(io.stdout, 1) end)
    assert.has_error(function() index({}, 1) end)
    assert.equal(1.5, index(a, 1))
  end)
end)
