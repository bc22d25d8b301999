-- Arrays in collectives and messages between ranks (lua/message.c).
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- Runs fn on every rank and returns the error object it raised on this
-- rank (fails unless every rank raised MPI_ERR_ARG).
local function agreed_error(fn)
  local ok, e = pcall(fn)
  assert.is_true(H.all(not ok), "every rank raises")
  assert.is_true(lmpio.iserror(e), tostring(e))
  assert.equal("MPI_ERR_ARG", e.name)
  return e
end

-- The same for a call that differs between ranks (nothing to check on 1
-- rank); the message must name what differs.
local function mismatch(pattern, fn)
  if size == 1 then return end
  local e = agreed_error(fn)
  assert.matches(pattern, e.message, 1, true)
end

-- No rank was left behind in a collective.
local function still_in_step()
  assert.equal(size * (size + 1) // 2, world:allreduce(rank + 1))
  assert.same({ 7, size }, world:bcast({ 7, size }, size - 1))
end

-- Every rank's values of rank r's array, as plain tables (the reference).
local function all_tables(a)
  return world:allgather(a:totable())
end

describe("comm:allreduce of arrays", function()
  after_each(H.cleanup)

  local function mine(t, n)
    local a = lmpio.array(t, n)
    for i = 1, n do a[i] = (rank + 1) * i % 7 + (i == 2 and rank or 0) end
    return a
  end

  it("reduces element-wise into a new array, for every op that applies", function()
    local ops = { -- a list: every rank must run the same sequence of collectives
      { "sum", function(x, y) return x + y end }, { "prod", function(x, y) return x * y end },
      { "min", math.min }, { "max", math.max },
      { "land", function(x, y) return (x ~= 0 and y ~= 0) and 1 or 0 end },
      { "lor", function(x, y) return (x ~= 0 or y ~= 0) and 1 or 0 end },
      { "band", function(x, y) return x & y end }, { "bor", function(x, y) return x | y end },
      { "bxor", function(x, y) return x ~ y end },
    }
    for _, t in ipairs { "INT", "INT64_T", "UINT8_T", "SHORT", "DOUBLE", "FLOAT" } do
      local a = mine(lmpio[t], 5)
      local before = a:totable()
      local all = all_tables(a)
      for _, of in ipairs(ops) do
        local op, f = of[1], of[2]
        local float = t == "DOUBLE" or t == "FLOAT"
        if not (float and (op == "land" or op == "lor" or op:sub(1, 1) == "b")) then
          local r = world:allreduce(a, op)
          assert.equal(lmpio[t], r:type())
          assert.equal(5, #r)
          for i = 1, 5 do
            local want = all[1][i]
            for k = 2, size do want = f(want, all[k][i]) end
            if t == "UINT8_T" then want = want % 256 end
            assert.equal(want, r[i], t .. " " .. op .. " " .. i)
          end
        end
      end
      assert.same(before, a:totable()) -- the argument is unchanged
    end
  end)

  it("sums histograms: the counts of the whole job on every rank", function()
    math.randomseed(rank + 1)
    local data = lmpio.array(lmpio.DOUBLE, 1000)
    for i = 1, #data do data[i] = math.random() end
    local counts = data:histogram(0, 1, 66)
    local total = world:allreduce(counts)
    assert.equal(lmpio.INT64_T, total:type())
    assert.equal(1000 * size, total:sum())
    local all = all_tables(counts)
    for b = 1, 66 do
      local want = 0
      for r = 1, size do want = want + all[r][b] end
      assert.equal(want, total[b])
    end
  end)

  it("keeps the shape, and defaults to sum (land for booleans)", function()
    local a = lmpio.array(lmpio.INT, { shape = { 2, 3 }, order = "F" }):fill(rank)
    local r = world:allreduce(a)
    assert.same({ { 2, 3 }, "F" }, { r:shape() })
    assert.equal(size * (size - 1) // 2, r:get(2, 3))
    local b = lmpio.array(lmpio.C_BOOL, { true, rank == 0 })
    assert.same({ true, size == 1 }, world:allreduce(b):totable())
    assert.same({ true, true }, world:allreduce(b, "lor"):totable())
    assert.equal(0, #world:allreduce(lmpio.array(lmpio.DOUBLE, 0)))
  end)

  it("scan and exscan of arrays", function()
    local a = lmpio.array(lmpio.INT, { 1, rank })
    assert.same({ rank + 1, rank * (rank + 1) // 2 }, world:scan(a):totable())
    assert.same({ rank, rank * (rank - 1) // 2 }, world:exscan(a):totable())
    local p = world:exscan(a, "prod")
    if rank == 0 then assert.same({ 1, 1 }, p:totable()) end
    local m = world:exscan(a, "max")
    if rank == 0 then assert.is_nil(m) else assert.equal(rank - 1, m[2]) end
  end)

  it("different lengths, types, ops or kinds on one rank: every rank raises", function()
    local last = size - 1
    mismatch("different lengths", function() return world:allreduce(lmpio.array(lmpio.DOUBLE, rank == last and 4 or 3)) end)
    still_in_step()
    mismatch("different types", function()
      return world:allreduce(lmpio.array(rank == last and lmpio.FLOAT or lmpio.DOUBLE, 3))
    end)
    still_in_step()
    mismatch("different operations", function()
      return world:allreduce(lmpio.array(lmpio.INT, 3), rank == last and "max" or "sum")
    end)
    mismatch("arrays on some ranks, numbers on others", function()
      return world:allreduce(rank == last and 3 or lmpio.array(lmpio.INT, 3))
    end)
    local e = agreed_error(function() return world:allreduce(lmpio.array(lmpio.DOUBLE, 2), "band") end)
    assert.matches("not to floats", e.message, 1, true)
    e = agreed_error(function()
      return world:allreduce(rank == last and lmpio.records({ { "x", lmpio.INT } }, 1) or lmpio.array(lmpio.INT, 1))
    end)
    assert.matches("records", e.message, 1, true)
    agreed_error(function() return world:allreduce(lmpio.array(lmpio.INT, 2), rank == last and "avg" or "sum") end)
    still_in_step()
  end)
end)

describe("comm:bcast, comm:allgather, comm:reduce, comm:gather, comm:scatter with arrays", function()
  after_each(H.cleanup)

  it("bcast fills the array of every other rank, or makes one, from any root", function()
    for root = 0, size - 1 do
      local a = lmpio.array(lmpio.INT16_T, 4):fill(rank == root and 9 or -1)
      local got = world:bcast(a, root)
      assert.equal(a, got)
      assert.same({ 9, 9, 9, 9 }, a:totable())
      local m = world:bcast(rank == root and lmpio.array(lmpio.DOUBLE, { shape = { 2, 2 } }):fill(0.5) or nil, root)
      assert.equal(lmpio.DOUBLE, m:type())
      assert.same({ { 2, 2 }, "C" }, { m:shape() })
      assert.equal(2.0, m:sum())
    end
    local big = lmpio.array(lmpio.DOUBLE, 300000)
    if rank == 0 then for i = 1, #big do big[i] = i end end
    world:bcast(big)
    assert.equal(300000 * 300001 / 2, big:sum())
  end)

  it("bcast: mismatched arrays, or arrays to fill from a root that sends none, raise everywhere", function()
    local last = size - 1
    mismatch("other lengths", function() return world:bcast(lmpio.array(lmpio.INT, rank == last and 2 or 3)) end)
    mismatch("other types", function() return world:bcast(lmpio.array(rank == last and lmpio.INT or lmpio.FLOAT, 3)) end)
    mismatch("not an array", function() return world:bcast(rank == 0 and "text" or lmpio.array(lmpio.INT, 1)) end)
    agreed_error(function() return world:bcast(lmpio.records({ { "x", lmpio.INT } }, 1)) end)
    still_in_step()
    -- values keep working as before, and the root's value may be a table again
    assert.same({ 1, 2 }, world:bcast(rank == 0 and { 1, 2 } or nil))
  end)

  it("allgather concatenates arrays of any lengths in rank order", function()
    local a = lmpio.array(lmpio.INT, rank + 1):fill(rank)
    local all = world:allgather(a)
    assert.equal(lmpio.INT, all:type())
    local want = {}
    for r = 0, size - 1 do for _ = 0, r do want[#want + 1] = r end end
    assert.same(want, all:totable())
    mismatch("arrays on some ranks", function()
      return world:allgather(rank == size - 1 and { 1 } or lmpio.array(lmpio.INT, 1))
    end)
    mismatch("arrays on some ranks", function()
      return world:allgather(rank == 0 and { 1 } or lmpio.array(lmpio.INT, 1))
    end)
    mismatch("different types", function()
      return world:allgather(lmpio.array(rank == size - 1 and lmpio.DOUBLE or lmpio.INT, 1))
    end)
    assert.equal(0, #world:allgather(lmpio.array(lmpio.UINT8_T, 0)))
    still_in_step()
  end)

  it("reduce gives the root the combination of numbers, booleans or arrays", function()
    for root = 0, size - 1 do
      local r = world:reduce(rank + 1, "sum", root)
      assert.equal(rank == root and size * (size + 1) // 2 or nil, r)
      assert.equal(rank == root and size - 1 + 0.5 or nil, world:reduce(rank + 0.5, "max", root))
      local all = world:reduce(rank == 0, "land", root)
      if rank == root then assert.equal(size == 1, all) else assert.is_nil(all) end
      local a = world:reduce(lmpio.array(lmpio.DOUBLE, { 1, rank }), "sum", root)
      if rank == root then
        assert.same({ size, size * (size - 1) / 2 }, a:totable())
      else
        assert.is_nil(a)
      end
    end
    assert.equal(rank == 0 and 6 or nil, world:reduce(rank == 0 and 6 or 4, "bor"))
  end)

  it("reduce: different roots, ops or arrays on one rank raise everywhere", function()
    local last = size - 1
    mismatch("different roots", function() return world:reduce(1, "sum", rank == last and last or 0) end)
    agreed_error(function() return world:reduce(1, "sum", size) end)
    mismatch("different lengths", function()
      return world:reduce(lmpio.array(lmpio.INT, rank == last and 1 or 2), "sum", 0)
    end)
    mismatch("on some ranks", function() return world:reduce(rank == last and true or 1, "land", 0) end)
    agreed_error(function() return world:reduce(1.5, "band", 0) end)
    still_in_step()
  end)

  it("gather gives the root the arrays concatenated, or a table of values", function()
    for root = 0, size - 1 do
      local a = world:gather(lmpio.array(lmpio.INT64_T, rank):fill(rank), root)
      local t = world:gather({ rank = rank, s = string.rep("x", rank * 40) }, root)
      local s = world:gather(rank, root)
      if rank == root then
        local want = {}
        for r = 0, size - 1 do for _ = 1, r do want[#want + 1] = r end end
        assert.same(want, a:totable())
        assert.equal(size, #t)
        for r = 0, size - 1 do
          assert.same({ rank = r, s = string.rep("x", r * 40) }, t[r + 1])
          assert.equal(r, s[r + 1])
        end
      else
        assert.is_nil(a)
        assert.is_nil(t)
        assert.is_nil(s)
      end
    end
    mismatch("arrays on some ranks", function()
      return world:gather(rank == size - 1 and 1 or lmpio.array(lmpio.INT, 1))
    end)
    mismatch("different roots", function() return world:gather(1, rank == size - 1 and 1 or 0) end)
    agreed_error(function() return world:gather(rank == 0 and print or 1) end)
    still_in_step()
  end)

  it("scatter cuts the root's array as lmpio.block does, and hands out a table's values", function()
    for _, n in ipairs { 0, 1, 2, 10, 1000 } do
      local a = lmpio.array(lmpio.DOUBLE, n)
      for i = 1, n do a[i] = i end
      local part = world:scatter(rank == size - 1 and a or nil, size - 1)
      local first, count = lmpio.block(n, size, rank)
      assert.equal(count, #part)
      assert.equal(lmpio.DOUBLE, part:type())
      for i = 1, count do assert.equal(first + i, part[i]) end
      -- gather of the parts gives the array back
      local back = world:gather(part, 0)
      if rank == 0 then assert.same(a:totable(), back:totable()) end
    end
    local t = {}
    for r = 1, size do t[r] = { r = r - 1, s = string.rep("y", r * 30) } end
    assert.same({ r = rank, s = string.rep("y", (rank + 1) * 30) }, world:scatter(rank == 0 and t or nil))
    local e = agreed_error(function() return world:scatter({ 1, 2, 3, 4, 5 }) end)
    assert.matches("one for each rank", e.message, 1, true)
    agreed_error(function() return world:scatter(rank == 0 and 5 or nil) end)
    still_in_step()
  end)
end)

describe("messages between ranks", function()
  after_each(H.cleanup)

  local right, left = (rank + 1) % size, (rank - 1) % size

  it("send and recv carry arrays with their type and shape, strings and values", function()
    local values = {
      lmpio.array(lmpio.INT, { 1, 2, rank }),
      lmpio.array(lmpio.FLOAT, { shape = { 2, 3 }, order = "F" }):fill(rank + 0.5),
      lmpio.array(lmpio.DOUBLE, 100000):fill(rank), -- large: zero-copy
      lmpio.buffer("bytes\0of rank " .. rank),
      string.rep("s", 5000) .. rank, "short", "",
      { rank = rank, list = { 1, 2, 3 } }, 42, 2.5, true, nil,
    }
    for k = 1, 12 do
      local req = world:isend(values[k], right, k)
      local got, from, tag = world:recv(left, k)
      req:wait()
      assert.equal(left, from)
      assert.equal(k, tag)
      local sent = values[k]
      if lmpio.isbuffer(sent) then
        assert.equal(sent:type(), got:type())
        assert.same({ sent:shape() }, { got:shape() })
        assert.equal(#sent, #got)
        -- the left rank's version of the array
        local want = sent:tostring():gsub(tostring(rank), tostring(left))
        if k == 1 then assert.same({ 1, 2, left }, got:totable()) end
        if k == 2 then assert.equal(left + 0.5, got:get(2, 3)) end
        if k == 3 then assert.equal(left * 100000, got:sum()) end
        if k == 4 then assert.equal(want, got:tostring()) end
      elseif type(sent) == "string" then
        assert.equal((sent:gsub(tostring(rank) .. "$", tostring(left))), got)
      elseif type(sent) == "table" then
        assert.same({ rank = left, list = { 1, 2, 3 } }, got)
      else
        assert.equal(sent, got)
      end
    end
  end)

  it("sendrecv exchanges halos around a ring and with lmpio.PROC_NULL at the ends", function()
    local n = 6
    local u = lmpio.array(lmpio.DOUBLE, n + 2) -- u[1] and u[n + 2] are halos
    for i = 2, n + 1 do u[i] = rank * 100 + i end
    -- periodic: my last interior element to the right, its first from the left
    local h, from = world:sendrecv(u:sub(n + 1, n + 1), right, left)
    u[1] = h[1]
    local h2 = world:sendrecv(u:sub(2, 2), left, right)
    u[n + 2] = h2[1]
    assert.equal(left, from)
    assert.equal(left * 100 + n + 1, u[1])
    assert.equal(right * 100 + 2, u[n + 2])
    -- not periodic: no neighbour beyond the ends (nil or PROC_NULL)
    local l = rank > 0 and rank - 1 or nil
    local r = rank < size - 1 and rank + 1 or lmpio.PROC_NULL
    local got, src = world:sendrecv(u:sub(n + 1, n + 1), r, l, 3)
    if rank == 0 then
      assert.is_nil(got)
      assert.equal(lmpio.PROC_NULL, src)
    else
      assert.equal((rank - 1) * 100 + n + 1, got[1])
      assert.equal(rank - 1, src)
    end
    assert.is_nil((world:recv(nil)))
    world:send("nothing", lmpio.PROC_NULL)
  end)

  it("messages from one rank with one tag arrive in order, also across irecv", function()
    local r1 = world:irecv(left, 7)
    local r2 = world:irecv(left, 7)
    assert.matches("lmpio.msgrequest %(receive", tostring(r1))
    local s = { world:isend("first", right, 7), world:isend("second", right, 7), world:isend("third", right, 7) }
    local third = world:recv(left, 7) -- posted last: gets the last message
    assert.equal("second", (r2:wait()))
    assert.equal("first", (r1:wait()))
    assert.equal("third", third)
    for _, q in ipairs(s) do q:wait() end
    assert.equal("first", (r1:wait())) -- waiting again gives the same
    -- test: false until the message is there, then true and the value
    local late = world:irecv(left, 8)
    world:barrier()
    assert.is_false(late:test())
    world:barrier() -- nobody sent it before every rank tested
    local sq = world:isend({ 1 }, right, 8)
    local done, v
    repeat done, v = late:test() until done
    assert.same({ 1 }, v)
    sq:wait()
  end)

  it("lmpio.waitall completes message requests, alone or with file requests", function()
    local rs = { world:irecv(left, 21), world:irecv(left, 22) }
    local ss = { world:isend(lmpio.array(lmpio.INT, { rank }), right, 22), world:isend("x" .. rank, right, 21) }
    lmpio.waitall(ss)
    lmpio.waitall(rs)
    assert.equal("x" .. left, (rs[1]:wait()))
    assert.equal(left, rs[2]:wait()[1])
    local path = H.tmpname("waitall")
    local fh <close> = lmpio.open(world, path, "w+")
    local mixed = { fh:iwrite_at(rank * 8, lmpio.array(lmpio.DOUBLE, { rank })), world:irecv(left, 23),
                    world:isend(rank, right, 23) }
    lmpio.waitall(mixed)
    assert.equal(1, mixed[1]:wait())
    assert.equal(left, (mixed[2]:wait()))
    assert.has_error(function() lmpio.waitall({ 1 }) end)
  end)

  -- The error of fn(...) (which must fail) as a string.
  local function fails(fn, ...)
    local ok, err = pcall(fn, ...)
    assert.is_false(ok)
    return tostring(err)
  end

  it("a pending isend holds its array against writes; wait, test, waitall, waitany let go", function()
    local path = H.tmpname("isendhold")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    fh:write_at_all(rank, lmpio.array(lmpio.DOUBLE, { -rank }))
    for _, n in ipairs({ 4, 100000 }) do -- small (copied at once) and large (sent from its memory): alike
      local a = lmpio.array(lmpio.DOUBLE, n):fill(rank)
      local req = world:isend(a, right, 31)
      local msg = fails(function() a[1] = -1 end)
      assert.truthy(msg:find("array is held by a pending isend; wait for its request first", 1, true), msg)
      assert.truthy(fails(function() a:fill(-1) end):find("held by a pending isend", 1, true))
      assert.truthy(fails(function() a:set(2, -1) end):find("held", 1, true))
      assert.truthy(fails(function() a:sub(2, 3)[1] = -1 end):find("held", 1, true))
      assert.truthy(fails(fh.read_at, fh, rank, a):find("held by a pending isend", 1, true)) -- a read into it
      -- reading it is fine, and so is sending or writing it out again
      assert.equal(rank, a[n])
      assert.equal(rank * n, a:sum())
      assert.equal(n, fh:write_at(size + rank * n, a))
      local again = world:isend(a, right, 32)
      local got, from = world:recv(left, 31)
      assert.equal(left, from)
      assert.equal(left * n, got:sum()) -- what was sent: the writes above changed nothing
      assert.equal(left, got[n])
      assert.equal(left * n, world:recv(left, 32):sum())
      again:wait()
      assert.truthy(fails(function() a[1] = -1 end):find("held", 1, true)) -- req still pending
      req:wait()
      a[1] = -1 -- the script's again
      assert.equal(-1, a[1])
      assert.equal(1, select(2, fh:read_at(rank, a:sub(1, 1))))
      assert.equal(-rank, a[1])
    end
    -- test that completes, waitall, waitany
    local b = lmpio.array(lmpio.INT, { rank })
    local s = world:isend(b, right, 33)
    assert.equal(left, world:recv(left, 33)[1])
    repeat until s:test()
    b[1] = 1
    s = world:isend(b, right, 34)
    assert.truthy(fails(function() b[1] = 2 end):find("held", 1, true))
    assert.equal(1, world:recv(left, 34)[1])
    lmpio.waitall({ s })
    b[1] = 2
    s = world:isend(b, right, 35)
    assert.truthy(fails(function() b[1] = 3 end):find("held", 1, true))
    assert.equal(2, world:recv(left, 35)[1])
    assert.equal(1, lmpio.waitany({ s }))
    b[1] = 3
    -- nothing is sent to nobody: nothing held
    world:isend(b, lmpio.PROC_NULL)
    b[1] = 4
    assert.equal(4, b[1])
  end)

  it("a message request collected before it completed lets go of its array", function()
    local c = lmpio.array(lmpio.INT, { rank, rank })
    local s = world:isend(c, right, 36)
    assert.truthy(fails(function() c[1] = 9 end):find("held by a pending isend", 1, true))
    s = nil -- dropped: its __gc waits for it and lets go
    local got = world:recv(left, 36)
    collectgarbage()
    collectgarbage()
    c[1] = 9
    assert.equal(9, c[1])
    assert.same({ left, left }, got:totable())
  end)

  it("lmpio.waitany takes message requests mixed with file requests", function()
    local path = H.tmpname("waitany")
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    fh:write_at_all(rank, lmpio.array(lmpio.INT, { rank + 10 }))
    local list = { world:irecv(left, 41), fh:iread_at(rank, 1, lmpio.INT) }
    -- nobody sent tag 41 yet: the read completes first
    local i, buf, n = lmpio.waitany(list)
    assert.equal(2, i)
    assert.equal(rank + 10, buf[1])
    assert.equal(1, n)
    world:barrier()
    local s = world:isend("m" .. rank, right, 41)
    local j, v, from, tag = lmpio.waitany(list)
    assert.equal(1, j)
    assert.equal("m" .. left, v)
    assert.equal(left, from)
    assert.equal(41, tag)
    assert.is_nil(lmpio.waitany(list)) -- none pending
    -- a send (no values); listed twice it counts at its first index
    local w = fh:iwrite_at(size + rank, lmpio.array(lmpio.INT, { 7 }))
    local k1 = lmpio.waitany({ s, w, s })
    local k2 = lmpio.waitany({ s, w, s })
    assert.same({ 1, 2 }, { math.min(k1, k2), math.max(k1, k2) })
    assert.is_nil(lmpio.waitany({ w, s }))
    assert.equal(1, w:wait())
    assert.has_error(function() lmpio.waitany({ list[1], 1 }) end)
  end)

  it("receives from any source, with the source and tag of each message", function()
    if rank ~= 0 then
      world:send(lmpio.array(lmpio.INT, { rank }), 0, rank + 10)
    else
      local seen = {}
      for _ = 1, size - 1 do
        local a, from, tag = world:recv(lmpio.ANY_SOURCE)
        assert.equal(from, a[1])
        assert.equal(from + 10, tag)
        seen[from] = true
      end
      for r = 1, size - 1 do assert.is_true(seen[r]) end
    end
    world:barrier() -- rank 0 took them all before the messages below start
    -- tags select: the later message first
    local s1, s2 = world:isend("a", right, 1), world:isend("b", right, 2)
    assert.equal("b", (world:recv(left, 2)))
    assert.equal("a", (world:recv(left, lmpio.ANY_TAG)))
    s1:wait()
    s2:wait()
  end)

  it("refuses what cannot be sent and ranks or tags out of range (locally)", function()
    assert.has_error(function() world:send(print, right) end)
    assert.has_error(function() world:send(lmpio.records({ { "x", lmpio.INT } }, 1), right) end)
    assert.has_error(function() world:send(1, size) end)
    assert.has_error(function() world:send(1, right, -1) end)
    assert.has_error(function() world:recv(-5) end)
    assert.has_error(function() world:send(1, lmpio.ANY_SOURCE) end)
    assert.has_error(function() world:isend(1, right, lmpio.ANY_TAG) end)
  end)
end)

describe("one table of reduction operations", function()
  it("takes the bitwise ops on integer numbers, and raises on every rank for floats", function()
    assert.equal(((1 << size) - 1), world:allreduce(1 << rank, "bor"))
    assert.equal(0, world:allreduce(1 << rank, "band") & ~((1 << size) - 1))
    local x = world:exscan(1 << rank, "bxor")   -- collectives: every rank calls both
    local y = world:exscan(1 << rank, "band")
    assert.equal(rank == 0 and 0 or (1 << rank) - 1, x)
    assert.equal(rank == 0 and -1 or rank == 1 and 1 or 0, y) -- rank 0: band's identity, all bits
    local ok, e = pcall(world.allreduce, world, 0.5, "band")
    assert.is_false(ok)
    assert.equal("MPI_ERR_ARG", e.name)
    assert.is_true(H.all(not ok))
  end)
end)
