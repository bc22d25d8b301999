local H = require "spec.helper"
local lmpio = H.lmpio

describe("communicators", function()
  after_each(H.cleanup)

  it("world has this rank and size", function()
    assert.is_true(H.rank >= 0 and H.rank < H.size)
    assert.equal(H.size, lmpio.world:size())
  end)

  it("self has one rank", function()
    assert.equal(0, lmpio.self:rank())
    assert.equal(1, lmpio.self:size())
  end)

  it("barrier returns", function()
    lmpio.world:barrier()
  end)

  it("split by parity ranks by key", function()
    local c = lmpio.world:split(H.rank % 2, -H.rank)
    assert.equal(math.floor((H.size - H.rank % 2 + 1) / 2), c:size())
    -- keys are negated ranks: the highest world rank is rank 0
    local members = c:allgather(H.rank)
    for i = 2, #members do assert.is_true(members[i - 1] > members[i]) end
    c:free()
  end)

  it("split with an undefined color gives nil", function()
    local c = lmpio.world:split(H.rank == 0 and 0 or lmpio.UNDEFINED)
    if H.rank == 0 then
      assert.equal(1, c:size())
      c:free()
    else
      assert.is_nil(c)
    end
  end)

  it("dup is a new communicator with the same ranks", function()
    local c = lmpio.world:dup()
    assert.equal(H.rank, c:rank())
    assert.equal(H.size, c:size())
    assert.is_false(c == lmpio.world)
    c:free()
    assert.has_error(function() c:rank() end, "attempt to use a freed communicator")
  end)

  it("cannot free world", function()
    assert.has_error(function() lmpio.world:free() end)
  end)

  it("bcast and allreduce agree", function()
    assert.equal("hello", lmpio.world:bcast(H.rank == 0 and "hello" or nil))
    assert.equal(42, lmpio.world:bcast(42))
    assert.equal(true, lmpio.world:bcast(true))
    assert.equal(H.size * (H.size - 1) // 2, lmpio.world:allreduce(H.rank))
    assert.equal(H.size - 1, lmpio.world:allreduce(H.rank, "max"))
  end)

  it("wtime increases", function()
    local t0 = lmpio.wtime()
    local t1 = lmpio.wtime()
    assert.is_true(t1 >= t0)
    assert.is_true(lmpio.wtick() > 0)
  end)

  it("tostring", function()
    assert.matches("lmpio.comm %(rank %d+ of %d+%)", tostring(lmpio.world))
  end)
end)

describe("communicators for scripts", function()
  local world, rank, size = H.world, H.rank, H.size

  it("bcast and allgather send tables, strings and nested values", function()
    local v = world:bcast(rank == 0 and { 1, 2.5, "x", t = { deep = { true, false } }, [10] = "ten" } or nil)
    assert.same({ 1, 2.5, "x", t = { deep = { true, false } }, [10] = "ten" }, v)
    assert.equal(math.type(v[1]), "integer")
    assert.equal(math.type(v[2]), "float")
    local big = string.rep("ab\0", 100000)
    assert.equal(big, world:bcast(rank == size - 1 and big or nil, size - 1))
    local all = world:allgather({ rank = rank, name = "r" .. rank, sq = rank * rank })
    assert.equal(size, #all)
    for i, t in ipairs(all) do assert.same({ rank = i - 1, name = "r" .. (i - 1), sq = (i - 1) ^ 2 // 1 }, t) end
    assert.same((function() local t = {} for i = 1, size do t[i] = i - 1 end return t end)(), world:allgather(rank))
    assert.same(world:allgather("s" .. rank)[size], "s" .. (size - 1))
  end)

  it("a value that cannot be sent raises on every rank, not a hang", function()
    -- only the root has a function: every rank raises the same error
    local ok, msg = pcall(world.bcast, world, rank == 0 and { f = print } or nil)
    assert.is_false(ok)
    assert.matches("bcast: the value of rank 0 cannot be sent: a function cannot be sent", msg, 1, true)
    -- one rank's value is bad: every rank names it
    local bad = size - 1
    ok, msg = pcall(world.allgather, world, rank == bad and coroutine.create(print) or rank)
    assert.is_false(ok)
    assert.matches("allgather: the value of rank " .. bad .. " cannot be sent: a thread", msg, 1, true)
    local cyc = {}
    cyc.self = cyc
    ok, msg = pcall(world.bcast, world, rank == 0 and cyc or nil)
    assert.is_false(ok)
    assert.matches("contains itself", msg, 1, true)
    -- and the communicator still works
    assert.equal(size, #world:allgather(true))
  end)

  it("scan and exscan: prefix sums for offsets", function()
    local n = rank + 1 -- rank r has r+1 items
    -- every collective call first, then the checks (a failed check must not
    -- leave the other ranks waiting in a collective)
    local ex, sc, prod = world:exscan(n), world:scan(n), world:exscan(2, "prod")
    local max, half, lor, land = world:exscan(rank, "max"), world:exscan(0.5), world:exscan(rank == 1, "lor"), world:scan(true)
    assert.equal(rank * (rank + 1) // 2, ex)
    assert.equal("integer", math.type(ex))
    assert.equal((rank + 1) * (rank + 2) // 2, sc)
    assert.equal(2 ^ rank // 1, prod)
    if rank == 0 then assert.is_nil(max) else assert.equal(rank - 1, max) end
    assert.near(rank * 0.5, half, 1e-12)
    assert.equal(rank > 1, lor)
    assert.equal(true, land)
    assert.has_error(function() world:exscan(1, "land") end)
    assert.has_error(function() world:scan("x") end)
  end)

  it("grid, dims_create and block give each rank its block", function()
    assert.same({ 3, 2 }, lmpio.dims_create(6, 2))
    assert.same({ 2, 2, 2 }, lmpio.dims_create(8, 3))
    assert.same({ 7, 1 }, lmpio.dims_create(7, { 0, 1 }))
    assert.has_error(function() lmpio.dims_create(7, { 2, 0 }) end, "bad argument #2 to 'dims_create' (the fixed dimensions do not divide 7 ranks)")
    local dims, coords = world:grid(3)
    assert.equal(size, dims[1] * dims[2] * dims[3])
    assert.equal(rank, (coords[1] * dims[2] + coords[2]) * dims[3] + coords[3])
    -- blocks cover 0..n-1 once, as darray's block distribution
    for _, n in ipairs({ 0, 1, 7, 10 }) do
      for parts = 1, 8 do
        local next_first = 0
        for i = 0, parts - 1 do
          local first, count = lmpio.block(n, parts, i)
          assert.equal(next_first, first)
          assert.is_true(count >= 0)
          next_first = first + count
        end
        assert.equal(n, next_first)
      end
    end
    assert.same({ 8, 0 }, { lmpio.block(8, 7, 6) }) -- ceil(8/7) = 2: the last ranks own nothing
    local d = lmpio.type.darray(7, 5, { 8 }, { "block" }, nil, { 7 }, lmpio.INT)
    assert.equal(select(2, lmpio.block(8, 7, 5)) * 4, d:size())
  end)

  it("split by a boolean color", function()
    local c = world:split(rank % 2 == 0 and 1 or false)
    if rank % 2 == 0 then
      assert.equal((size + 1) // 2, c:size())
      c:free()
    else
      assert.is_nil(c)
    end
  end)

  it("info values may be numbers or booleans", function()
    local path = H.tmpname("info")
    local fh <close> = lmpio.open(world, path, "w+", { cb_nodes = 1, romio_cb_write = "enable" })
    assert.equal("1", fh:get_info().cb_nodes)
    local ok, msg = pcall(lmpio.open, world, path, "r", { cb_nodes = {} })
    assert.is_false(ok)
    assert.matches("info value of 'cb_nodes' must be a string, a number or a boolean, not a table", tostring(msg), 1, true)
    fh:close()
  end)
end)
