-- Slices (lua/slice.c): n-d strided views that are their own MPI datatype,
-- taken directly by every call that moves data.
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- A 4 x 5 array with element (i, j) = 10 i + j.
local function grid45(order)
  local u = lmpio.array(lmpio.DOUBLE, { shape = { 4, 5 }, order = order })
  for i = 1, 4 do for j = 1, 5 do u:set(i, j, 10 * i + j) end end
  return u
end

describe("array:slice", function()
  after_each(H.cleanup)

  it("takes ranges with steps per dimension, in the array's order, sharing its memory", function()
    for _, order in ipairs({ "C", "F" }) do
      local u = grid45(order)
      local s = u:slice({ 2, 3 }, { 2, 5, 2 })
      assert.same({ { 2, 2 }, order }, { s:shape() })
      assert.equal(4, #s)
      assert.equal(22, s:get(1, 1))
      assert.equal(34, s:get(2, 2))
      assert.equal(24, s[{ 1, 2 }])
      local want = order == "C" and { 22, 24, 32, 34 } or { 22, 32, 24, 34 }
      assert.same(want, s:totable())
      local bytes = {}
      for k = 1, 4 do bytes[k] = string.pack("d", want[k]) end
      assert.equal(table.concat(bytes), s:tostring())
      s:set(1, 2, -1)
      assert.equal(-1, u:get(2, 4))
      s[4] = -2
      assert.equal(-2, u:get(3, 4))
      s:fill(7)
      assert.same({ 7, 7, 7, 7 }, { u:get(2, 2), u:get(2, 4), u:get(3, 2), u:get(3, 4) })
      assert.equal(23, u:get(2, 3)) -- between the slice's columns: untouched
      assert.matches("slice", tostring(s))
    end
  end)

  it("drops a dimension given an index, counts from the end, and slices slices", function()
    local u = grid45("C")
    local col = u:slice(nil, 3)
    assert.same({ 13, 23, 33, 43 }, col:totable())
    assert.same({ { 4 }, "C" }, { col:shape() })
    local inner = u:slice({ 2, -2 }, { 2, -2 })
    assert.same({ 22, 23, 24, 32, 33, 34 }, inner:totable())
    assert.same({ 23, 33 }, inner:slice(nil, 2):totable())
    assert.same({ 32, 34 }, inner:slice(2, { 1, 3, 2 }):totable())
    assert.equal(33, u:slice(3, 3)[1])
    assert.equal(0, #u:slice({ 3, 2 }))
    -- whole rows of a C-order array are one block: a plain view
    local rows = u:slice({ 2, 3 })
    assert.matches("view", tostring(rows))
    assert.same({ 21, 22, 23, 24, 25, 31, 32, 33, 34, 35 }, rows:totable())
    -- an unshaped array has one dimension
    local a = lmpio.array(lmpio.INT, { 1, 2, 3, 4, 5, 6, 7 })
    assert.same({ 2, 5 }, a:slice({ 2, -1, 3 }):totable())
    assert.equal(5 + 2, a:slice({ 2, -1, 3 }):sum())
  end)

  it("refuses ranges out of bounds, steps below 1, extra ranges, records", function()
    local u = grid45("C")
    assert.has_error(function() u:slice({ 0, 2 }) end)
    assert.has_error(function() u:slice({ 1, 5 }) end)
    assert.has_error(function() u:slice({ 1, 2, 0 }) end)
    assert.has_error(function() u:slice(1, 1, 1) end)
    assert.has_error(function() u:slice(5) end)
    assert.has_error(function() u:slice("x") end)
    assert.has_error(function() lmpio.records({ { "x", lmpio.INT } }, 3):slice({ 1, 2 }) end)
    local s = u:slice(nil, 2)
    assert.has_error(function() s:sub(1, 2) end)
    assert.has_error(function() s:reshape({ 2, 2 }) end)
    assert.has_error(function() s:sum(1, 2) end) -- a range of a slice
    assert.has_error(function() lmpio.byteswap(s, 0, "abcdefgh", 0, 1, 8) end)
  end)

  it("is written to and read from a file in place, by every kind of call", function()
    local path = H.tmpname("slice")
    local fh <close> = lmpio.open(world, path, "w+")
    -- each rank's 3 x 4 interior of a 5 x 6 array with ghost cells, one
    -- column block of a 3 x 4*size global array
    local u = lmpio.array(lmpio.DOUBLE, { shape = { 5, 6 } }):fill(-1)
    for i = 1, 3 do for j = 1, 4 do u:set(i + 1, j + 1, 1000 * rank + 10 * i + j) end end
    local interior = u:slice({ 2, -2 }, { 2, -2 })
    fh:set_view(0, lmpio.DOUBLE, lmpio.type.subarray({ 3, 4 * size }, { 3, 4 }, { 0, 4 * rank }, lmpio.DOUBLE))
    assert.equal(12, fh:write_all(interior))
    local whole = lmpio.array(lmpio.DOUBLE, { shape = { 3, 4 * size } })
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    fh:read_at_all(0, whole)
    for r = 0, size - 1 do
      assert.equal(1000 * r + 34, whole:get(3, 4 * r + 4))
      assert.equal(1000 * r + 11, whole:get(1, 4 * r + 1))
    end
    assert.equal(-1, u:get(1, 1)) -- the ghost cells are not in the file
    -- read back into another array's interior: blocking, nonblocking, split
    local v = lmpio.array(lmpio.DOUBLE, { shape = { 5, 6 } }):fill(-5)
    local vin = v:slice({ 2, -2 }, { 2, -2 })
    fh:set_view(0, lmpio.DOUBLE, lmpio.type.subarray({ 3, 4 * size }, { 3, 4 }, { 0, 4 * rank }, lmpio.DOUBLE))
    local _, n = fh:read_at_all(0, vin)
    assert.equal(12, n)
    assert.same(interior:totable(), vin:totable())
    assert.equal(-5, v:get(1, 1))
    assert.equal(-5, v:get(5, 6))
    vin:fill(0)
    local req = fh:iread_at(0, vin)
    assert.has_error(function() vin[1] = 1 end) -- held by the read
    req:wait()
    assert.same(interior:totable(), vin:totable())
    vin:fill(0)
    fh:read_at_all_begin(0, vin)
    fh:read_at_all_end()
    assert.same(interior:totable(), vin:totable())
    -- a slice as the data of a write at an offset: a column
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    assert.equal(3, fh:write_at(100 + 3 * rank, u:slice({ 2, 4 }, 3)))
    local col = fh:read_at(100 + 3 * rank, 3, lmpio.DOUBLE)
    assert.same({ 1000 * rank + 12, 1000 * rank + 22, 1000 * rank + 32 }, col:totable())
    assert.has_error(function() fh:write_at(0, interior, 2, lmpio.DOUBLE) end) -- a slice is its own type
  end)

  it("is sent and received in place, small and large, typed or self-describing", function()
    local right, left = (rank + 1) % size, (rank - 1) % size
    for _, n in ipairs({ 5, 100000 }) do
      local a = lmpio.array(lmpio.DOUBLE, { shape = { n, 3 } })
      for i = 1, n do a:set(i, 2, rank * 1e6 + i) end
      local col = a:slice(nil, 2)
      local b = lmpio.array(lmpio.DOUBLE, { shape = { n, 3 } }):fill(-1)
      local req = world:isend(col, right, 1)
      local got, src, tag, cnt = world:recv(left, 1, b:slice(nil, 3))
      req:wait()
      assert.equal(left, src)
      assert.equal(n, cnt)
      assert.equal(left * 1e6 + n, b:get(n, 3))
      assert.equal(left * 1e6 + 1, got[1])
      assert.equal(-1, b:get(n, 2))
      assert.equal(n * left * 1e6 + n * (n + 1) / 2, b:slice(nil, 3):sum())
      -- self-describing: a new array of the slice's shape
      local c = world:sendrecv(col, right, left, 2)
      assert.same({ { n }, "C" }, { c:shape() })
      assert.equal(left * 1e6 + n, c[n])
      -- sendrecv into a slice
      world:sendrecv(col, right, left, 3, b:slice(nil, 1))
      assert.equal(left * 1e6 + 2, b:get(2, 1))
    end
    -- the wrong type or too many elements: an error, the message consumed
    local s = world:isend(lmpio.array(lmpio.INT, 3), right, 4)
    local e = H.error_of(world.recv, world, left, 4, lmpio.array(lmpio.DOUBLE, 3))
    assert.equal("MPI_ERR_TYPE", e.name)
    s:wait()
    s = world:isend(lmpio.array(lmpio.INT, 3), right, 5)
    e = H.error_of(world.recv, world, left, 5, lmpio.array(lmpio.INT, 2))
    assert.equal("MPI_ERR_COUNT", e.name)
    s:wait()
  end)

  it("is data of the collectives", function()
    local u = grid45("C")
    local col = u:slice(nil, 2)
    if rank ~= 0 then col:fill(0) end
    world:bcast(col, 0)
    assert.same({ 12, 22, 32, 42 }, col:totable())
    assert.equal(21, u:get(2, 1))
    local all = world:allgather(u:slice(2, { 1, 5, 2 }))
    assert.equal(3 * size, #all)
    assert.same({ 21, 23, 25 }, all:totable(1, 3))
    local sum = world:allreduce(u:slice({ 1, 2 }, 5))
    assert.same({ 15 * size, 25 * size }, sum:totable())
    local g = world:gather(u:slice(3, { 2, 3 }), 0)
    if rank == 0 then assert.same({ 32, 33 }, g:totable(1, 2)) end
  end)
end)

describe("neighbours on a grid", function()
  it("comm:grid gives the ranks before and after along each dimension", function()
    local dims, coords, nb = world:grid(2)
    local dims2, coords2, sub, starts, nb2 = world:grid(2, { 10, 10 }, true)
    assert.same(dims, dims2)
    assert.same(coords, coords2)
    assert.equal(2, #sub + #starts - 2)
    local function rank_of(c) return c[1] * dims[2] + c[2] end
    for d = 1, 2 do
      local c = { coords[1], coords[2] }
      c[d] = coords[d] - 1
      assert.equal(coords[d] > 0 and rank_of(c) or nil, nb[d][1])
      c[d] = (coords[d] - 1) % dims[d]
      assert.equal(rank_of(c), nb2[d][1])
      c[d] = coords[d] + 1
      assert.equal(coords[d] < dims[d] - 1 and rank_of(c) or nil, nb[d][2])
      c[d] = (coords[d] + 1) % dims[d]
      assert.equal(rank_of(c), nb2[d][2])
    end
    -- a Cartesian communicator agrees with the grid
    local cart = world:cart(2, { false, true })
    assert.same(coords, cart:coords())
    local b1, a1 = cart:shift(1)
    assert.same({ nb[1][1], nb[1][2] }, { b1, a1 })
    local b2, a2 = cart:shift(2)
    assert.same({ nb2[2][1], nb2[2][2] }, { b2, a2 })
    assert.equal(rank, cart:rank())
    -- halos straight to sendrecv: nil is no neighbour
    local got = cart:sendrecv(rank, a1, b1, 7)
    assert.equal(b1, got)
    cart:free()
    assert.has_error(function() world:shift(1) end)
  end)
end)

describe("wrong arguments to the new methods", function()
  it("raise errors, never crash", function()
    local a = lmpio.array(lmpio.DOUBLE, { shape = { 3, 4 } })
    local s = a:slice({ 1, 2 }, { 1, 4, 2 })
    local junk = { nil, true, "x", {}, { 1, "a" }, { 0, 0, 0 }, -1, 0, 1.5, 2 ^ 62 // 1, math.huge, print,
                   lmpio.array(lmpio.INT, 2), lmpio.buffer(3), lmpio.records({ { "x", lmpio.INT } }, 2), s }
    local calls = {
      function(x, y) return a:slice(x, y) end, function(x, y) return s:slice(x, y) end,
      function(x, y) return a:copy(x, y) end, function(x, y) return s:add(x, y) end,
      function(x, y) return a:subtract(x, y) end, function(x, y) return s:multiply(x, y) end,
      function(x, y) return a:divide(x, y) end, function(x, y) return s:axpy(x, y) end,
      function(x) return a + x end, function(x) return x - s end, function(x) return s * x end,
      function(x, y) return s:set(x, y) end, function(x) return s:fill(x) end,
      function(x, y) return world:sendrecv(s, nil, nil, x, y) end, function(x, y) return world:grid(x, y) end,
      function(x, y) return world:shift(x, y) end, function(x) return world:coords(x) end,
      function(x, y) return world:irecv(lmpio.PROC_NULL, x, y) end,
      function(x) return world:recv(lmpio.PROC_NULL, 0, x) end,
      function(x, y) return s:reshape(x, y) end, function(x, y) return s:index(x, y) end,
    }
    for ci, f in ipairs(calls) do
      for i = 1, #junk + 1 do
        for j = 1, #junk + 1, 3 do
          local ok, e = pcall(f, junk[i], junk[j])
          if not ok then assert.is_not_nil(e, "call " .. ci) end
        end
      end
    end
    -- still usable afterwards
    assert.equal(12, #a)
    world:barrier()
  end)
end)
