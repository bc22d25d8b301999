local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- Every test is collective-safe: each rank makes the same collective calls
-- in the same order, whatever its own checks say.
describe("nonblocking and split collective access", function()
  after_each(H.cleanup)

  it("iwrite_at / iread_at return requests; wait gives the data and the count", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    local req = fh:iwrite_at(rank * 3, lmpio.array(lmpio.INT, { rank, rank + 1, rank + 2 }))
    assert.equal("userdata", type(req))
    assert.truthy(tostring(req):find("lmpio.request", 1, true))
    collectgarbage() -- the request keeps the array alive
    assert.equal(3, req:wait())
    assert.equal(3, req:wait()) -- waiting again gives the same
    local r = fh:iread_at(rank * 3, 3, lmpio.INT)
    collectgarbage()
    local buf, n = r:wait()
    assert.equal(3, n)
    assert.same({ rank, rank + 1, rank + 2 }, buf:totable())
    -- into a given buffer
    local b = lmpio.array(lmpio.INT, 3)
    local b2, m = fh:iread_at(rank * 3, b):wait()
    assert.equal(b, b2)
    assert.equal(3, m)
    assert.equal(rank + 2, b[3])
    -- a Lua string for bytes
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
    assert.equal(4, fh:iwrite_at(100 + 4 * rank, "abcd"):wait())
    local s, k = fh:iread_at(100 + 4 * rank, 4):wait()
    assert.equal(4, k)
    assert.equal("abcd", s:tostring())
  end)

  it("test says done at once and returns the results", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    local req = fh:iwrite_at(rank, lmpio.array(lmpio.DOUBLE, { rank + 0.5 }))
    local function poll(r) -- the transfer runs in the background: test until done
      while true do
        local res = table.pack(r:test())
        if res[1] then return table.unpack(res, 1, res.n) end
      end
    end
    local done, n = poll(req)
    assert.is_true(done)
    assert.equal(1, n)
    local done2, buf, m = poll(fh:iread_at(rank, 1, lmpio.DOUBLE))
    assert.is_true(done2)
    assert.equal(1, m)
    assert.equal(rank + 0.5, buf[1])
  end)

  it("iwrite / iread move the individual pointer when started", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(rank * 40, lmpio.INT, lmpio.INT)
    local r1 = fh:iwrite(lmpio.array(lmpio.INT, { 1, 2, 3 }))
    assert.equal(3, fh:get_position())
    local r2 = fh:iwrite(lmpio.array(lmpio.INT, { 4, 5 }))
    assert.equal(5, fh:get_position())
    assert.equal(2, r2:wait())
    assert.equal(3, r1:wait())
    fh:seek(1)
    local r = fh:iread(3, lmpio.INT)
    assert.equal(4, fh:get_position())
    local buf, n = r:wait()
    assert.equal(3, n)
    assert.same({ 2, 3, 4 }, buf:totable())
  end)

  it("collective i-calls: iwrite_at_all, iread_at_all, iwrite_all, iread_all", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    assert.equal(2, fh:iwrite_at_all(2 * rank, lmpio.array(lmpio.INT, { rank, -rank })):wait())
    local buf, n = fh:iread_at_all(0, 2 * size, lmpio.INT):wait()
    assert.equal(2 * size, n)
    for r = 0, size - 1 do
      assert.equal(r, buf[2 * r + 1])
      assert.equal(-r, buf[2 * r + 2])
    end
    fh:set_view(rank * 8, lmpio.INT, lmpio.INT)
    assert.equal(2, fh:iwrite_all(lmpio.array(lmpio.INT, { 7, rank })):wait())
    assert.equal(2, fh:get_position())
    fh:seek(0)
    local b, m = fh:iread_all(2, lmpio.INT):wait()
    assert.equal(2, m)
    assert.same({ 7, rank }, b:totable())
  end)

  it("iwrite_shared / iread_shared move the shared pointer", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    assert.equal(2, fh:iwrite_shared(lmpio.array(lmpio.INT, { rank, rank })):wait())
    world:barrier()
    assert.equal(2 * size, fh:get_position_shared())
    world:barrier()
    fh:seek_shared(0)
    local a, n = fh:iread_shared(2, lmpio.INT):wait()
    assert.equal(2, n)
    assert.equal(a[1], a[2])
    world:barrier()
    assert.equal(2 * size, fh:get_position_shared())
  end)

  it("errors: independent calls raise when started, collective ones at completion on every rank", function()
    local path = H.tmpname()
    do
      local fh <close> = lmpio.open(world, path, "w+")
    end
    local fh <close> = lmpio.open(world, path, "r")
    local e = H.error_of(fh.iwrite_at, fh, 0, "xy")
    assert.equal("MPI_ERR_READ_ONLY", e.name)
    -- collective: agreed in the background, every rank raises from wait
    local req = fh:iwrite_all("xy")
    e = H.error_of(req.wait, req)
    assert.equal("MPI_ERR_READ_ONLY", e.name)
    assert.matches("MPI_MODE_RDONLY", e.message, 1, true)
    e = H.error_of(fh.iread_at, fh, 0, "xy")
    assert.truthy(tostring(e):find("string", 1, true))
  end)

  it("requests never waited for are collected safely", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    for i = 1, 20 do fh:iwrite_at(rank * 20 + i - 1, "z") end
    fh:iread_at(0, 1)
    collectgarbage()
    collectgarbage()
    assert.is_true(fh:get_size() >= rank * 20 + 20)
  end)

  it("split collectives at offsets and at the individual pointer", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    local a = lmpio.array(lmpio.DOUBLE, { rank + 0.25, rank + 0.5 })
    fh:write_at_all_begin(2 * rank, a)
    a = nil
    collectgarbage()
    collectgarbage()
    assert.equal(2, fh:write_at_all_end())
    fh:read_at_all_begin(2 * rank, 2, lmpio.DOUBLE)
    collectgarbage()
    local b, n = fh:read_at_all_end()
    assert.equal(2, n)
    assert.same({ rank + 0.25, rank + 0.5 }, b:totable())

    fh:set_view(16 * rank, lmpio.DOUBLE, lmpio.DOUBLE)
    local c = lmpio.array(lmpio.DOUBLE, { -1.5, rank })
    fh:write_all_begin(c)
    assert.equal(2, fh:write_all_end(c))
    assert.equal(2, fh:get_position())
    fh:seek(0)
    local d = lmpio.array(lmpio.DOUBLE, 2)
    fh:read_all_begin(d)
    local d2, m = fh:read_all_end(d)
    assert.equal(d, d2)
    assert.equal(2, m)
    assert.same({ -1.5, rank }, d:totable())
  end)

  it("split collective rules: one at a time, _end matching _begin", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    fh:write_all_begin(lmpio.array(lmpio.INT, { rank }))
    -- a second begin fails on every rank; the first stays active
    local e = H.error_of(fh.read_at_all_begin, fh, 0, 1, lmpio.INT)
    assert.equal("MPI_ERR_OTHER", e.name)
    -- mismatched kind
    e = H.error_of(fh.read_all_end, fh)
    assert.equal("MPI_ERR_OTHER", e.name)
    e = H.error_of(fh.write_ordered_end, fh)
    assert.equal("MPI_ERR_OTHER", e.name)
    -- the right end still works
    assert.equal(1, fh:write_all_end())
    -- end without begin
    e = H.error_of(fh.write_all_end, fh)
    assert.equal("MPI_ERR_OTHER", e.name)
    e = H.error_of(fh.read_at_all_end, fh)
    assert.equal("MPI_ERR_OTHER", e.name)
  end)

  it("requests complete in the background; waitall, waitany; a coroutine polls", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    local N = 1 << 16
    local reqs = {}
    for k = 1, 4 do
      local a = lmpio.array(lmpio.INT, N):fill(k * 100 + rank)
      reqs[k] = fh:iwrite_at(((k - 1) * size + rank) * N, a)
    end
    lmpio.waitall(reqs)
    for k = 1, 4 do assert.equal(N, reqs[k]:wait()) end
    local reads = {}
    for k = 1, 4 do reads[k] = fh:iread_at(((k - 1) * size + rank) * N, N, lmpio.INT) end
    local seen = {}
    for _ = 1, 4 do
      local i, buf, n = lmpio.waitany(reads)
      assert.is_nil(seen[i])
      seen[i] = true
      assert.equal(N, n)
      assert.equal(i * 100 + rank, buf[1])
      assert.equal(i * 100 + rank, buf[N])
    end
    assert.is_nil(lmpio.waitany(reads)) -- none pending
    -- a coroutine polls its request and yields meanwhile
    local co = coroutine.wrap(function()
      local r = fh:iread_at(rank * N, N, lmpio.INT)
      while true do
        local done, buf, n = r:test()
        if done then return buf, n end
        coroutine.yield(false)
      end
    end)
    local buf, n = co()
    while buf == false do buf, n = co() end
    assert.equal(N, n)
    assert.equal(100 + rank, buf[N])
    assert.has_error(function() lmpio.waitall({ 1 }) end)
    fh:close()
  end)

  it("waitall and waitany wait a request listed twice once", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    local r = fh:iwrite_at(2 * rank, lmpio.array(lmpio.INT, { rank, -rank }))
    local r2 = fh:iwrite_at(2 * (size + rank), lmpio.array(lmpio.INT, { 7 }))
    lmpio.waitall({ r, r2, r })
    assert.equal(2, r:wait())
    assert.equal(1, r2:wait())
    lmpio.waitall({ r, r }) -- both done already
    local r3 = fh:iread_at(2 * rank, 2, lmpio.INT)
    local i, buf, n = lmpio.waitany({ r3, r3 })
    assert.equal(1, i)
    assert.equal(2, n)
    assert.same({ rank, -rank }, buf:totable())
    assert.is_nil(lmpio.waitany({ r3, r3 })) -- none pending
    local r4 = fh:iread_at(2 * rank, 2, lmpio.INT)
    lmpio.waitall({ r4, r4, r4 })
    local b4, n4 = r4:wait()
    assert.equal(2, n4)
    assert.same({ rank, -rank }, b4:totable())
    -- a failed request listed twice: its error, once
    lmpio.register_datarep("spec_rq_failread", {
      extent = function(t) return t:size() end,
      read = function() error("no reading today") end,
    })
    fh:set_view(0, lmpio.INT, lmpio.INT, "spec_rq_failread")
    local r5 = fh:iread_at(2 * rank, 2, lmpio.INT)
    local e = H.error_of(lmpio.waitall, { r5, r5 })
    assert.equal("MPI_ERR_CONVERSION", e.name)
    assert.matches("no reading today", e.message, 1, true)
    assert.equal(0, select(2, r5:wait()))
    fh:close()
  end)

  it("a dropped request keeps its data until the transfer is done", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    local N = 1 << 18
    for k = 1, 3 do
      -- neither the request nor its array is referenced after this line
      fh:iwrite_at((k - 1) * N, lmpio.array(lmpio.DOUBLE, N):fill(k + rank / 8))
      fh:iread_at(0, N, lmpio.DOUBLE)
      collectgarbage()
      collectgarbage()
    end
    local last = fh:iwrite_at(3 * N, lmpio.array(lmpio.DOUBLE, { -1 }))
    assert.equal(1, last:wait())
    fh:sync()
    world:barrier()
    fh:sync()
    local back = fh:read_at(2 * N, N, lmpio.DOUBLE)
    -- some rank's last write won; every value is one of them
    local v = back[N]
    assert.is_true(v >= 3 and v < 3 + size / 8)
    fh:close()
  end)

  it("converters written in Lua run at the start of a write and the completion of a read", function()
    -- Each double is stored big-endian and doubled: a file written
    -- without conversion would not read back.
    local calls = { write = 0, read = 0 }
    lmpio.register_datarep("spec_req_twice", {
      extent = { DOUBLE = 8 },
      encode = function(_, v)
        calls.write = calls.write + 1
        return string.pack(">d", v * 2)
      end,
      decode = function(_, bytes)
        calls.read = calls.read + 1
        return string.unpack(">d", bytes) / 2
      end,
    })
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local N = 1000
    local data = lmpio.array(lmpio.DOUBLE, N)
    for i = 1, N do data[i] = rank * N + i + 0.5 end
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE, "spec_req_twice")
    local w = fh:iwrite_at(rank * N, data)
    assert.is_true(calls.write > 0) -- converted in the starting call
    assert.equal(N, w:wait())
    world:barrier()
    -- the file holds the representation's bytes
    local raw = H.slurp(path)
    assert.equal(2 * (rank * N + 1.5), string.unpack(">d", raw, rank * N * 8 + 1))
    local r = fh:iread_at(rank * N, N, lmpio.DOUBLE)
    local before = calls.read
    local got, n = r:wait()
    assert.is_true(calls.read > before) -- converted when it completed
    assert.equal(N, n)
    assert.equal(rank * N + 1.5, got[1])
    assert.equal(rank * N + N + 0.5, got[N])
    -- several at once, a collective one, a polled one, and a dropped one
    local reqs = {
      fh:iread_at(rank * N, 10, lmpio.DOUBLE),
      fh:iread_at_all(rank * N + 10, 10, lmpio.DOUBLE),
    }
    fh:iread_at(rank * N, N, lmpio.DOUBLE) -- dropped: converted when collected
    collectgarbage()
    lmpio.waitall(reqs)
    local a, na = reqs[1]:wait()
    local b, nb = reqs[2]:wait()
    assert.equal(10, na)
    assert.equal(10, nb)
    assert.equal(rank * N + 10.5, a[10])
    assert.equal(rank * N + 11.5, b[1])
    local p = fh:iread_at(rank * N + N - 1, 5, lmpio.DOUBLE)
    local done, buf, k = p:test()
    while not done do done, buf, k = p:test() end
    assert.equal(rank == size - 1 and 1 or 5, k)
    assert.equal(rank * N + N + 0.5, buf[1])
    fh:close()
  end)
end)
