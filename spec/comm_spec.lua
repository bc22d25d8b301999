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
    H.raises(function() c:rank() end, "attempt to use a freed communicator")
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

-- Runs fn(comm) on every rank and returns the error object it raised on
-- this rank (fails when it raised nothing on any rank).
local function agreed_error(fn)
  local ok, e = pcall(fn)
  assert.is_true(H.all(not ok), "every rank raises")
  assert.is_true(lmpio.iserror(e), tostring(e))
  assert.equal("MPI_ERR_ARG", e.name)
  return e
end

-- The communicator still works after an agreed error (no rank is left
-- behind in a collective).
local function still_in_step()
  assert.equal(H.size * (H.size + 1) // 2, lmpio.world:allreduce(H.rank + 1))
  assert.same({ 7, H.size }, lmpio.world:bcast({ 7, H.size }, H.size - 1))
end

describe("comm:bcast", function()
  after_each(H.cleanup)

  local function sample(r)
    return {
      1, 2.5, "three", true, false,
      nested = { deeper = { r, -r, math.maxinteger, math.mininteger } },
      [10] = "sparse", [1.5] = "float key", [true] = "boolean key",
      bytes = "a\0b\255", float = 3.0, tiny = 1e-300, neg0 = -0.0, inf = math.huge,
      empty = {},
    }
  end

  it("sends tables of numbers, strings, booleans and nested tables from every root", function()
    for root = 0, H.size - 1 do
      local v = lmpio.world:bcast(H.rank == root and sample(root) or nil, root)
      assert.same(sample(root), v)
      assert.equal(math.type(3.0), math.type(v.float))
      assert.equal("integer", math.type(v[1]))
      assert.equal("integer", math.type(v.nested.deeper[3]))
      assert.equal(-math.huge, 1 / v.neg0)
    end
  end)

  it("sends nil, booleans, numbers and strings as they are", function()
    assert.is_nil(lmpio.world:bcast(nil))
    local b = true
    if H.rank == 0 then b = false end
    assert.equal(false, lmpio.world:bcast(b))
    assert.equal(-5, lmpio.world:bcast(H.rank == 0 and -5 or nil))
    assert.equal("float", math.type(lmpio.world:bcast(H.rank == 0 and 2.0 or nil)))
    local nan = lmpio.world:bcast(0 / 0)
    assert.is_true(nan ~= nan)
    assert.equal("", lmpio.world:bcast(H.rank == 0 and "" or "ignored"))
  end)

  it("sends long strings and big tables (more than one message)", function()
    local s = H.rank == 0 and string.rep("0123456789", 300001) or nil
    assert.equal(string.rep("0123456789", 300001), lmpio.world:bcast(s))
    local t = {}
    for i = 1, 5000 do t[i] = { i, tostring(i) } end
    local got = lmpio.world:bcast(H.rank == 0 and t or nil)
    assert.same(t, got)
  end)

  it("sends values of every length around the inline limit", function()
    for n = 225, 245 do
      local s = string.rep(string.char(n), n)
      assert.equal(s, lmpio.world:bcast(H.rank == H.size - 1 and s or nil, H.size - 1))
    end
  end)

  it("gives the root its own value and the others a copy without metatable", function()
    local mt = {}
    local t = setmetatable({ x = 1 }, mt)
    local got = lmpio.world:bcast(t)
    if H.rank == 0 then
      assert.equal(t, got)
    else
      assert.same({ x = 1 }, got)
      assert.is_nil(getmetatable(got))
    end
  end)

  it("sends a table that appears twice (not a cycle) twice", function()
    local shared = { 1, 2 }
    local got = lmpio.world:bcast({ a = shared, b = shared }, H.size - 1)
    assert.same({ 1, 2 }, got.a)
    assert.same({ 1, 2 }, got.b)
  end)

  it("a function on the root only: every rank raises, none hangs", function()
    local e = agreed_error(function()
      return lmpio.world:bcast(H.rank == 0 and { 1, { f = print } } or nil)
    end)
    assert.matches("bad argument #1 (a function at [2].f cannot be sent", e.message, 1, true)
    if H.rank ~= 0 then assert.matches("(on rank 0)", e.message, 1, true) end
    still_in_step()
  end)

  it("userdata, threads, cycles, bad keys and deep nesting cannot be sent", function()
    local cyc = { 1 }
    cyc[2] = { cyc }
    local deep = {}
    for _ = 1, 150 do deep = { deep } end
    local cases = {
      { lmpio.records({ { "x", lmpio.INT } }, 2), "records cannot be sent" }, -- arrays can (message_spec)
      { { x = { lmpio.world } }, "a lmpio.comm at .x[1] cannot be sent" },
      { coroutine.create(print), "a thread cannot be sent" },
      { cyc, "a table at [2][1] that contains itself cannot be sent" },
      { { [{}] = 1 }, "a table key of a table cannot be sent" },
      { deep, "nested more than 100 deep" },
      { { ["not an identifier"] = { print } }, "at [\"not an identifier\"][1]" },
    }
    local root = H.size - 1
    for _, c in ipairs(cases) do
      local e = agreed_error(function() return lmpio.world:bcast(H.rank == root and c[1] or nil, root) end)
      assert.matches(c[2], e.message, 1, true)
    end
    still_in_step()
  end)

  it("ranks that name different roots, or a root out of range, all raise", function()
    if H.size > 1 then
      local e = agreed_error(function() return lmpio.world:bcast(1, H.rank) end)
      assert.matches("different roots", e.message, 1, true)
    end
    local e = agreed_error(function() return lmpio.world:bcast(1, H.rank == 0 and H.size or 0) end)
    assert.matches("bad argument #2", e.message, 1, true)
    e = agreed_error(function() return lmpio.world:bcast(1, H.rank == H.size - 1 and "x" or 0) end)
    assert.matches("bad argument #2 (number expected, got string)", e.message, 1, true)
    still_in_step()
  end)
end)

describe("comm:allgather", function()
  after_each(H.cleanup)

  it("gathers every rank's integer (as before)", function()
    local t = lmpio.world:allgather(H.rank * 10)
    assert.equal(H.size, #t)
    for r = 0, H.size - 1 do assert.equal(r * 10, t[r + 1]) end
  end)

  it("gathers tables, strings and nil, small and large", function()
    local function mine(r)
      if r % 3 == 0 then return { rank = r, name = "rank " .. r, list = { r, r + 0.5, r % 2 == 0 } } end
      if r % 3 == 1 then return string.rep(string.char(65 + r), 1000 * r) end
      return nil
    end
    local t = lmpio.world:allgather(mine(H.rank))
    for r = 0, H.size - 1 do assert.same(mine(r), t[r + 1]) end
  end)

  it("gathers values of every length around the inline limit", function()
    for n = 45, 60 do
      local t = lmpio.world:allgather(string.rep("v", n + (H.rank % 2)))
      for r = 0, H.size - 1 do assert.equal(string.rep("v", n + (r % 2)), t[r + 1]) end
    end
  end)

  it("gathers copies", function()
    local own = { 1 }
    local t = lmpio.world:allgather(own)
    assert.is_false(own == t[H.rank + 1])
    assert.same(own, t[H.rank + 1])
  end)

  it("an unsendable value on the last rank only: every rank raises, none hangs", function()
    local last = H.size - 1
    local e = agreed_error(function()
      return lmpio.world:allgather(H.rank == last and { data = lmpio.buffer(4) } or { H.rank })
    end)
    assert.matches("bad argument #1 (a lmpio.buffer at .data cannot be sent", e.message, 1, true)
    if H.rank ~= last then assert.matches("(on rank " .. last .. ")", e.message, 1, true) end
    still_in_step()
  end)

  it("on a sub-communicator", function()
    local c = lmpio.world:split(H.rank % 2)
    local t = c:allgather({ world = H.rank })
    assert.equal(c:size(), #t)
    for i, v in ipairs(t) do assert.equal(H.rank % 2 + 2 * (i - 1), v.world) end
    c:free()
  end)
end)

describe("comm:exscan, comm:scan, comm:allreduce", function()
  after_each(H.cleanup)

  it("exscan sums the lower ranks' values (rank 0 gets 0)", function()
    local off = lmpio.world:exscan(H.rank + 1)
    assert.equal(H.rank * (H.rank + 1) // 2, off)
    assert.equal("integer", math.type(off))
    local f = lmpio.world:exscan(0.5)
    assert.equal(H.rank * 0.5, f)
    assert.equal("float", math.type(f))
  end)

  it("exscan with other ops; rank 0 gets the identity, or nil for max and min", function()
    local mx = lmpio.world:exscan(H.rank, "max")
    if H.rank == 0 then assert.is_nil(mx) else assert.equal(H.rank - 1, mx) end
    local mn = lmpio.world:exscan(-H.rank, "min")
    if H.rank == 0 then assert.is_nil(mn) else assert.equal(-(H.rank - 1), mn) end
    assert.equal(H.rank == 0 and 1 or 2 ^ H.rank // 1, lmpio.world:exscan(2, "prod"))
    assert.equal(true, lmpio.world:exscan(true))
    assert.equal(H.rank > 1, lmpio.world:exscan(H.rank ~= 0, "lor"))
  end)

  it("scan includes this rank", function()
    assert.equal((H.rank + 1) * (H.rank + 2) // 2, lmpio.world:scan(H.rank + 1))
    assert.equal(H.rank, lmpio.world:scan(H.rank, "max"))
    assert.equal(H.rank == 0, lmpio.world:scan(H.rank == 0, "land"))
  end)

  it("allreduce of booleans: every op is all or any", function()
    local v = H.rank % 2 == 0
    local any, all = H.size > 1 or v, v and H.size == 1
    -- (ipairs: every rank must name the ops in the same order)
    for _, c in ipairs { { "land", all }, { "min", all }, { "prod", all }, { "lor", any }, { "max", any }, { "sum", any } } do
      assert.equal(c[2], lmpio.world:allreduce(v, c[1]), c[1])
    end
    assert.equal(true, lmpio.world:allreduce(true))
    assert.equal(false, lmpio.world:allreduce(false, "lor"))
  end)

  it("mixed integers and floats give floats on every rank", function()
    local v = lmpio.world:allreduce(H.rank == 0 and 1.5 or 1)
    assert.equal("float", math.type(v))
    assert.equal(H.size + 0.5, v)
  end)

  it("argument errors and disagreements raise on every rank", function()
    for _, m in ipairs { "allreduce", "scan", "exscan" } do
      local f = lmpio.world[m]
      local e = agreed_error(function() return f(lmpio.world, H.rank == 0 and "x" or 1) end)
      assert.matches("bad argument #1", e.message, 1, true)
      assert.equal(m, e.call)
      e = agreed_error(function() return f(lmpio.world, 1, H.rank == H.size - 1 and "median" or "sum") end)
      assert.matches("invalid option 'median'", e.message, 1, true)
      if H.size > 1 then
        e = agreed_error(function() return f(lmpio.world, 1, H.rank == 0 and "max" or "min") end)
        assert.matches("different operations", e.message, 1, true)
        e = agreed_error(function() return f(lmpio.world, H.rank == 0 and true or 1) end)
        assert.matches("booleans on some ranks, numbers on others", e.message, 1, true)
      end
    end
    still_in_step()
  end)
end)

describe("comm:split", function()
  after_each(H.cleanup)

  it("color false or nil: this rank gets nil", function()
    local c = lmpio.world:split(H.rank % 2 == 0 and 5 or false)
    if H.rank % 2 == 0 then
      assert.equal((H.size + 1) // 2, c:size())
      assert.equal(H.rank // 2, c:rank())
      c:free()
    else
      assert.is_nil(c)
    end
    c = lmpio.world:split(H.rank == 0 and 0 or nil)
    assert.equal(H.rank == 0, c ~= nil)
    if c then c:free() end
  end)

  it("the key orders the ranks, ties by rank", function()
    local c = lmpio.world:split(0, H.rank == H.size - 1 and -1 or 0)
    local expect = (H.rank == H.size - 1) and 0 or H.rank + (H.size > 1 and 1 or 0)
    assert.equal(expect, c:rank())
    c:free()
  end)

  it("a bad color or key on one rank: every rank raises, none hangs", function()
    local last = H.size - 1
    local e = agreed_error(function() return lmpio.world:split(H.rank == last and -3 or 0) end)
    assert.matches("bad argument #1", e.message, 1, true)
    e = agreed_error(function() return lmpio.world:split(H.rank == last and true or 0) end)
    assert.matches("bad argument #1 (number expected, got boolean)", e.message, 1, true)
    e = agreed_error(function() return lmpio.world:split(0, H.rank == 0 and 2 ^ 40 // 1 or 0) end)
    assert.matches("bad argument #2 (out of range)", e.message, 1, true)
    still_in_step()
  end)
end)

describe("grids", function()
  after_each(H.cleanup)

  it("dims_create balances free dims", function()
    assert.same({ 4, 3 }, lmpio.dims_create(12, 2))
    assert.same({ 2, 2, 3 }, lmpio.dims_create(12, { 0, 0, 3 }))
    assert.same({ 7, 1, 1 }, lmpio.dims_create(7, 3))
    assert.same({ 2, 3 }, lmpio.dims_create(6, { 2, 3 }))
    assert.same({ 1 }, lmpio.dims_create(1, 1))
  end)

  it("dims_create rejects what MPI_Dims_create cannot do", function()
    assert.has_error(function() lmpio.dims_create(12, { 5, 0 }) end)
    assert.has_error(function() lmpio.dims_create(6, { 2, 2 }) end)
    assert.has_error(function() lmpio.dims_create(6, 0) end)
    assert.has_error(function() lmpio.dims_create(0, 2) end)
    assert.has_error(function() lmpio.dims_create(6, { -1, 0 }) end)
    assert.has_error(function() lmpio.dims_create(6, { "x" }) end)
    local ok, e = pcall(lmpio.dims_create, 12, { 5, 0 })
    assert.is_false(ok)
    assert.matches("do not divide 12", e, 1, true)
  end)

  it("comm:grid places every rank once, in row-major order", function()
    local dims, coords = lmpio.world:grid(3)
    assert.same(lmpio.dims_create(H.size, 3), dims)
    assert.equal(H.size, dims[1] * dims[2] * dims[3])
    assert.equal(H.rank, (coords[1] * dims[2] + coords[2]) * dims[3] + coords[3])
    local all = lmpio.world:allgather(table.concat(coords, ","))
    local seen = {}
    for _, c in ipairs(all) do
      assert.is_nil(seen[c])
      seen[c] = true
    end
    local d2, c2 = lmpio.world:grid({ 0, 1 })
    assert.same({ H.size, 1 }, d2)
    assert.same({ H.rank, 0 }, c2)
  end)

  it("comm:grid cuts an array into blocks that cover it once (empty blocks too)", function()
    for _, sizes in ipairs { { 10, 7, 5 }, { 1, 1, 3 }, { 0, 4, 4 } } do
      local dims, coords, sub, starts = lmpio.world:grid(3, sizes)
      local n = 1
      for d = 1, 3 do
        assert.is_true(sub[d] >= 0 and starts[d] >= 0 and starts[d] + sub[d] <= sizes[d])
        -- the block distribution of lmpio.block and darray: ceil(size / dims) each
        local b = (sizes[d] + dims[d] - 1) // dims[d]
        assert.equal(math.min(coords[d] * b, sizes[d]), starts[d])
        assert.equal(math.min(b, sizes[d] - starts[d]), sub[d])
        n = n * sub[d]
      end
      assert.equal(sizes[1] * sizes[2] * sizes[3], lmpio.world:allreduce(n))
    end
  end)

  it("comm:grid argument errors", function()
    assert.has_error(function() lmpio.world:grid(0) end)
    assert.has_error(function() lmpio.world:grid({}) end)
    assert.has_error(function() lmpio.world:grid(2, { 4 }) end)
    assert.has_error(function() lmpio.world:grid(2, { 4, -1 }) end)
    assert.has_error(function() lmpio.world:grid({ H.size + 1 }) end)
  end)
end)

describe("info tables", function()
  after_each(H.cleanup)

  it("accept numbers and booleans as values", function()
    local path = H.tmpname("info")
    local fh <close> = lmpio.open(lmpio.world, path, "w+",
      { cb_buffer_size = 1048576, ind_wr_buffer_size = 65536.0, lmpio_no_such_flag = true })
    local info = fh:get_info()
    assert.equal("1048576", info.cb_buffer_size)
    assert.equal("65536", info.ind_wr_buffer_size)
  end)

  it("reject other values with a clear message", function()
    local path = H.tmpname("info")
    local ok, e = pcall(lmpio.open, lmpio.world, path, "w+", { cb_nodes = print })
    assert.is_false(ok)
    assert.matches("info value of 'cb_nodes' must be a string, number or boolean", tostring(e.message or e), 1, true)
  end)
end)

describe("after MPI_Finalize", function()
  after_each(H.cleanup)

  -- A process of its own (rank 0 runs it, without the job's environment):
  -- a __gc that runs after the module finalised MPI at exit.
  for _, how in ipairs { "end", "os.exit" } do
    it("comm methods raise a Lua error instead of aborting (" .. how .. ")", function()
      local out
      if H.rank == 0 then
        -- $LUA: the interpreter the specs run under (make check-asan: a
        -- wrapper that preloads the sanitizers)
        local cmd = string.format("env -i PATH=%q LUA_CPATH_5_4=%q OMPI_ALLOW_RUN_AS_ROOT=1 "
          .. "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 timeout -k 5 60 %s spec/comm_late.lua %s 2>&1",
          os.getenv("PATH"), os.getenv("LUA_CPATH_5_4") or "", os.getenv("LUA") or "lua5.4", how)
        local p = assert(io.popen(cmd))
        local text = p:read("a")
        local ok, kind, code = p:close()
        out = { text = text, ok = ok, kind = kind, code = code }
      end
      out = lmpio.world:bcast(out)
      assert.is_true(out.ok, out.text)
      assert.matches("late barrier: after MPI was finalized", out.text, 1, true)
      assert.matches("late split comm: after MPI was finalized", out.text, 1, true)
      assert.matches("late rank: after MPI was finalized", out.text, 1, true)
      assert.matches("late bcast: after MPI was finalized", out.text, 1, true)
      assert.matches("late dims_create: after MPI was finalized", out.text, 1, true)
      assert.matches("late grid: after MPI was finalized", out.text, 1, true)
      assert.matches("late tostring: lmpio.comm (MPI finalized)", out.text, 1, true)
      assert.matches("late open: after MPI was finalized", out.text, 1, true)
    end)
  end
end)

describe("block distributions", function()
  local world, rank, size = H.world, H.rank, H.size
  it("grid, dims_create and block give each rank its block", function()
    assert.same({ 3, 2 }, lmpio.dims_create(6, 2))
    assert.same({ 2, 2, 2 }, lmpio.dims_create(8, 3))
    assert.same({ 7, 1 }, lmpio.dims_create(7, { 0, 1 }))
    assert.has_error(function() lmpio.dims_create(7, { 2, 0 }) end)
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

  it("10 items over 4 parts are 3, 3, 3, 1 in block, grid and darray alike", function()
    local counts = {}
    for i = 0, 3 do counts[i + 1] = select(2, lmpio.block(10, 4, i)) end
    assert.same({ 3, 3, 3, 1 }, counts)
    local c4 = world:split(rank < 4 and 0 or nil)
    if c4 then
      local _, _, sub, starts = c4:grid(1, { 10 })
      if c4:size() == 4 then assert.equal(counts[rank + 1], sub[1]) end
      assert.same({ lmpio.block(10, c4:size(), rank) }, { starts[1], sub[1] })
      c4:free()
    end
  end)

  -- The datatypes of rank r's block as subarray (from grid) and as darray
  -- (from the same dims) are the same: size, extent and where the data is.
  local function same_type(a, b)
    assert.equal(a:size(), b:size())
    assert.equal(a:extent(), b:extent())
    assert.equal(a:lb(), b:lb())
    if a:size() > 0 then
      assert.equal(a:true_lb(), b:true_lb())
      assert.equal(a:true_extent(), b:true_extent())
    end
  end

  it("grid's subarray of every rank is its darray, at any rank count (empty blocks too)", function()
    for _, sizes in ipairs { { 10 }, { 2 }, { 1 }, { 0 }, { 10, 7 }, { 3, 1 }, { 1, 3 }, { 0, 5 }, { 5, 4, 3 } } do
      local nd = #sizes
      local dims, _, sub, starts = world:grid(nd, sizes)
      local distribs, count = {}, 1
      for d = 1, nd do
        distribs[d] = "block"
        count = count * sub[d]
      end
      local s = lmpio.type.subarray(sizes, sub, starts, lmpio.DOUBLE)
      local d = lmpio.type.darray(size, rank, sizes, distribs, nil, dims, lmpio.DOUBLE)
      same_type(s, d)
      assert.equal(count * 8, s:size())
      local f = lmpio.type.subarray(sizes, sub, starts, lmpio.DOUBLE, "fortran")
      same_type(f, lmpio.type.darray(size, rank, sizes, distribs, nil, dims, lmpio.DOUBLE, "fortran"))
    end
  end)

  it("an empty block is a subarray with a zero extent that views and writes nothing", function()
    local e = lmpio.type.subarray({ 4, 6 }, { 0, 6 }, { 4, 0 }, lmpio.INT)
    assert.equal(0, e:size())
    assert.equal(4 * 6 * 4, e:extent())
    assert.equal(0, e:lb())
    assert.equal(0, lmpio.type.subarray({ 0 }, { 0 }, { 0 }, lmpio.INT):extent())
    assert.has_error(function() lmpio.type.subarray({ 4 }, { 0 }, { 5 }, lmpio.INT) end)
    assert.has_error(function() lmpio.type.subarray({ 4 }, { -1 }, { 0 }, lmpio.INT) end)
    -- every rank writes its block of a 1-D array of 2 doubles: at 4 ranks
    -- two ranks have nothing, and the same script runs
    local path = H.tmpname("grid")
    local fh <close> = lmpio.open(world, path, "w+")
    local _, _, sub, starts = world:grid(1, { 2 })
    fh:set_view(0, lmpio.DOUBLE, lmpio.type.subarray({ 2 }, sub, starts, lmpio.DOUBLE))
    local mine = lmpio.array(lmpio.DOUBLE, sub[1])
    for i = 1, sub[1] do mine[i] = starts[1] + i end
    assert.equal(sub[1], fh:write_all(mine))
    local back, n = fh:read_at_all(0, sub[1], lmpio.DOUBLE)
    assert.equal(sub[1], n)
    assert.same(mine:totable(), back:totable())
    fh:sync()
    world:barrier()
    fh:sync()
    assert.equal(string.pack("=dd", 1, 2), H.slurp(path))
  end)

end)
