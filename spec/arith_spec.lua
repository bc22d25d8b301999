-- Array arithmetic in C (lua/arith.c) and reductions over slices.
local H = require "spec.helper"
local lmpio = H.lmpio

local function seq(t, n, f)
  local a = lmpio.array(t, n)
  for i = 1, n do a[i] = f(i) end
  return a
end

describe("array arithmetic", function()
  it("copies between arrays and slices of one shape and type", function()
    local u = lmpio.array(lmpio.DOUBLE, { shape = { 4, 5 } })
    for i = 1, 20 do u[i] = i end
    local t = lmpio.array(lmpio.DOUBLE, { shape = { 2, 3 } })
    assert.equal(t, t:copy(u:slice({ 2, 3 }, { 1, 3 })))
    assert.same({ 6, 7, 8, 11, 12, 13 }, t:totable())
    u:slice({ 3, 4 }, { 3, 5 }):copy(t)
    assert.same({ 6, 7, 8 }, u:slice(3, { 3, 5 }):totable())
    assert.same({ 11, 12, 13 }, u:slice(4, { 3, 5 }):totable())
    assert.has_error(function() t:copy(u) end)                        -- shape
    assert.has_error(function() t:copy(lmpio.array(lmpio.FLOAT, { shape = { 2, 3 } })) end) -- type
    -- set copies in storage order from element i, whatever the shapes
    local flat = lmpio.array(lmpio.DOUBLE, 8)
    flat:set(2, t)
    assert.same({ 0, 6, 7, 8, 11, 12, 13, 0 }, flat:totable())
    flat:set(1, u:slice(nil, 1))
    assert.same({ 1, 6, 11, 16 }, flat:totable(1, 4))
  end)

  it("adds, subtracts, multiplies and divides by numbers and arrays, in place or into out", function()
    local a = seq(lmpio.DOUBLE, 6, function(i) return i end)
    local b = seq(lmpio.DOUBLE, 6, function(i) return 10 * i end)
    assert.equal(a, a:add(1))
    assert.same({ 2, 3, 4, 5, 6, 7 }, a:totable())
    a:subtract(b)
    assert.same({ -8, -17, -26, -35, -44, -53 }, a:totable())
    local out = lmpio.array(lmpio.DOUBLE, 6)
    assert.equal(out, b:multiply(a, out))
    assert.same({ -80, -340, -780, -1400, -2200, -3180 }, out:totable())
    assert.same({ 10, 20, 30, 40, 50, 60 }, b:totable())
    b:divide(4)
    assert.same({ 2.5, 5, 7.5, 10, 12.5, 15 }, b:totable())
    b:divide(b)
    assert.same({ 1, 1, 1, 1, 1, 1 }, b:totable())
    -- slices: the elements where they are
    local u = lmpio.array(lmpio.FLOAT, { shape = { 3, 4 } }):fill(1)
    u:slice({ 2, 3 }, { 1, 4, 2 }):multiply(3)
    assert.same({ 1, 1, 1, 1, 3, 1, 3, 1, 3, 1, 3, 1 }, u:totable())
    u:slice(nil, 2):add(u:slice(nil, 1))
    assert.same({ 2, 4, 4 }, u:slice(nil, 2):totable())
    assert.has_error(function() a:add(lmpio.array(lmpio.DOUBLE, 5)) end)
    assert.has_error(function() a:add("x") end)
  end)

  it("axpy and the operators", function()
    local y = seq(lmpio.DOUBLE, 5, function(i) return i end)
    local x = seq(lmpio.DOUBLE, 5, function(i) return 2 * i end)
    assert.equal(y, y:axpy(0.5, x))
    assert.same({ 2, 4, 6, 8, 10 }, y:totable())
    local z = y + x
    assert.same({ 4, 8, 12, 16, 20 }, z:totable())
    assert.same({ 0, 0, 0, 0, 0 }, (y - y):totable())
    assert.same({ 4, 8, 12, 16, 20 }, (2 * y):totable())
    assert.same({ 1, 2, 3, 4, 5 }, (y / 2):totable())
    assert.same({ -1, -3, -5, -7, -9 }, (1 - y):totable())
    assert.same({ 5, 2.5 }, (10 / y):totable(1, 2))
    local m = lmpio.array(lmpio.DOUBLE, { shape = { 2, 3 }, order = "F" }):fill(1)
    assert.same({ { 2, 3 }, "F" }, { (m + m):shape() })
  end)

  it("integers wrap, take integers only, and have no division", function()
    local a = lmpio.array(lmpio.INT, { 2147483647, 1, -3 })
    a:add(1)
    assert.same({ -2147483648, 2, -2 }, a:totable())
    a:multiply(a)
    assert.same({ 0, 4, 4 }, a:totable())
    local b = lmpio.array(lmpio.INT64_T, { 1, 2, 3 })
    b:axpy(3, b)
    assert.same({ 4, 8, 12 }, b:totable())
    assert.has_error(function() a:add(0.5) end)
    assert.has_error(function() a:divide(2) end)
    assert.has_error(function() a:add(2 ^ 40 // 1) end)
    assert.has_error(function() lmpio.array(lmpio.SHORT, 2):add(1) end)
    assert.has_error(function() a:add(b) end) -- another type
  end)

  it("reduces slices: sum, min, max, minmax, histogram", function()
    local u = lmpio.array(lmpio.DOUBLE, { shape = { 30, 40 } })
    for i = 1, #u do u[i] = ((i * 7919) % 1000) / 7 end
    local s = u:slice({ 3, 27, 2 }, { 5, 38, 3 })
    local t = s:totable()
    local sum, lo, hi = 0, math.huge, -math.huge
    for _, v in ipairs(t) do
      sum = sum + v
      lo, hi = math.min(lo, v), math.max(hi, v)
    end
    assert.is_true(math.abs(s:sum() - sum) < 1e-9 * math.abs(sum))
    assert.equal(lo, s:min())
    assert.equal(hi, s:max())
    assert.same({ lo, hi }, { s:minmax() })
    local counts = s:histogram(0, 150, 10)
    assert.equal(#t, counts:sum())
    local c1 = 0
    for _, v in ipairs(t) do if v < 15 then c1 = c1 + 1 end end
    assert.equal(c1, counts[1])
    local n = 0
    for _, ch, k in s:chunks(7) do
      for q = 1, k do assert.equal(t[n + q], ch[q]) end
      n = n + k
    end
    assert.equal(#t, n)
  end)

  it("one step of a 5-point stencil in vector statements equals the loop", function()
    local ny, nx = 7, 9
    local u = lmpio.array(lmpio.DOUBLE, { shape = { ny + 2, nx + 2 } })
    for i = 1, #u do u[i] = (i * 37 % 23) / 23 end
    local ref = {}
    for i = 2, ny + 1 do
      for j = 2, nx + 1 do
        ref[#ref + 1] = u:get(i, j) + 0.2 * (u:get(i - 1, j) + u:get(i + 1, j) + u:get(i, j - 1) + u:get(i, j + 1)
          - 4 * u:get(i, j))
      end
    end
    local c = u:slice({ 2, -2 }, { 2, -2 })
    local t = lmpio.array(lmpio.DOUBLE, { shape = { ny, nx } })
    t:copy(u:slice({ 1, -3 }, { 2, -2 })):add(u:slice({ 3, -1 }, { 2, -2 }))
     :add(u:slice({ 2, -2 }, { 1, -3 })):add(u:slice({ 2, -2 }, { 3, -1 })):axpy(-4, c)
    c:axpy(0.2, t)
    local got = c:totable()
    for k = 1, #ref do assert.is_true(math.abs(got[k] - ref[k]) < 1e-14, k) end
  end)
end)
