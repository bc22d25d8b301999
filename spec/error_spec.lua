local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

describe("errors", function()
  after_each(H.cleanup)

  it("a failing call raises an object with class, name and message", function()
    local path = H.tmpname()
    local ok, e = pcall(lmpio.open, world, path, "r")
    assert.is_false(ok)
    assert.is_true(lmpio.iserror(e))
    assert.equal("MPI_ERR_NO_SUCH_FILE", e.name)
    assert.equal(lmpio.ERR_NO_SUCH_FILE, e.class)
    assert.equal("MPI_ERR_NO_SUCH_FILE", lmpio.error_class_name(e.class))
    assert.matches("^cannot open", e.message) -- the call is e.call, said once
    assert.is_nil(e.message:find("MPI_ERR_NO_SUCH_FILE", 1, true)) -- and the name is e.name
    assert.matches(path, e.message, 1, true)
    local s = tostring(e)
    assert.matches("MPI_ERR_NO_SUCH_FILE", s)
    -- where the script made the call, which rank, which call
    assert.matches("error_spec.lua:%d+", e.where)
    assert.matches(e.where, s, 1, true)
    assert.equal(rank, e.rank)
    assert.equal("open", e.call)
    assert.matches("error class " .. e.class, s)
    assert.matches("No such file", s)
    assert.matches("no such file", lmpio.error_string(e.class))
    assert.is_false(lmpio.iserror("MPI_ERR_NO_SUCH_FILE"))
  end)

  -- Six common mistakes (issue 32): each raises an error object with every
  -- field, `where` the line of this file that made the call, and tostring
  -- one line that says each thing once.
  it("common mistakes raise error objects with every field, said once", function()
    local path = H.tmpname()
    local fh = lmpio.open(world, path, "w+")
    local ints = lmpio.array(lmpio.INT, { 1, 2 })
    local function line() return debug.getinfo(2, "l").currentline end
    local e1 = { pcall(function() return fh:write_at(0, ints, 5, lmpio.INT) end) } local l1 = line()
    local e2 = { pcall(function() return fh:set_view("zero", lmpio.INT, lmpio.INT) end) } local l2 = line()
    local e3 = { pcall(function() return lmpio.open(world, path, "rx") end) } local l3 = line()
    local e4 = { pcall(function() return fh:write_at(0, ints, 1, lmpio.DOUBLE) end) } local l4 = line()
    local e5 = { pcall(function() return world:allreduce(1, "avg") end) } local l5 = line()
    local e6 = { pcall(function() ints[1] = 1.5 end) } local l6 = line()
    local e7 = { pcall(function() return fh:read_at(0, ints, 1, lmpio.FLOAT) end) } local l7 = line()
    fh:close()
    local e8 = { pcall(function() return fh:write_at(0, "x") end) } local l8 = line()
    local e9 = { pcall(function() return fh:get_size() end) } local l9 = line()
    local want = {
      { e1, l1, "MPI_ERR_ARG", "write_at", "need 20 bytes but the buffer has 8" },
      { e2, l2, "MPI_ERR_ARG", "set_view", "number expected, got string" },
      { e3, l3, "MPI_ERR_ARG", "open", "unknown access mode 'rx'" },
      { e4, l4, "MPI_ERR_ARG", "write_at", "an array of INT cannot be accessed as DOUBLE" },
      { e5, l5, "MPI_ERR_ARG", "allreduce", "invalid option 'avg'" },
      { e6, l6, "MPI_ERR_ARG", "__newindex", "element 1 of an array of INT needs an integer" },
      { e7, l7, "MPI_ERR_ARG", "read_at", "an array of INT cannot be accessed as FLOAT" },
      { e8, l8, "MPI_ERR_FILE", "write_at", "attempt to use a closed file" },
      { e9, l9, "MPI_ERR_FILE", "get_size", "attempt to use a closed file" },
    }
    local me = debug.getinfo(1, "S").short_src
    for i, w in ipairs(want) do
      local ok, e = w[1][1], w[1][2]
      assert.is_false(ok, "mistake " .. i)
      assert.is_true(lmpio.iserror(e), "mistake " .. i .. ": " .. tostring(e))
      assert.equal(w[3], e.name, "mistake " .. i)
      assert.equal(lmpio[w[3]:sub(5)], e.class, "mistake " .. i)
      assert.equal(w[4], e.call, "mistake " .. i)
      assert.matches(w[5], e.message, 1, true)
      assert.equal(me .. ":" .. w[2], e.where, "mistake " .. i)
      assert.equal(rank, e.rank)
      local s = tostring(e)
      assert.is_nil(s:find("\n"), s)
      assert.equal(me .. ":" .. w[2] .. ": " .. w[3] .. " (error class " .. e.class .. ") in " .. w[4] .. ": " ..
                   e.message, s)
      -- each thing once: the message names neither the call nor itself again
      local _, calls = s:gsub("%f[%w_]" .. w[4] .. "%f[^%w_]", "")
      assert.equal(1, calls, s)
      local _, names = s:gsub(w[3], "")
      assert.equal(1, names, s)
      local _, texts = s:gsub(w[5]:gsub("%p", "%%%0"), "")
      assert.equal(1, texts, s)
    end
    -- the count beyond the array names the count (argument #3)
    assert.matches("bad argument #3", e1[2].message, 1, true)
    -- the mode of open without its communicator is still argument #2
    local e10 = H.error_of(lmpio.open, path, "rx")
    assert.matches("bad argument #2", e10.message, 1, true)
    assert.equal("open", e10.call)
  end)

  it("typed arrays take datatypes of their element type; byte buffers and strings take any", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local ints = lmpio.array(lmpio.INT, { 1, 2, 3, 4 })
    assert.equal(1, fh:write_at(0, ints, 1, lmpio.INT32_T)) -- the same element
    assert.equal(1, fh:write_at(0, ints, 1, lmpio.type.vector(2, 1, 2, lmpio.INT)))
    assert.equal(1, fh:write_at(0, ints, 1, lmpio.type.struct({ 1, 1 }, { 0, 4 }, { lmpio.INT, lmpio.INT })))
    assert.equal(4, fh:write_at(0, ints, 4, lmpio.BYTE)) -- raw bytes
    assert.equal(2, fh:write_at(0, lmpio.buffer(16), 2, lmpio.DOUBLE))
    assert.equal(1, fh:write_at(0, "abcdefgh", 1, lmpio.DOUBLE))
    -- a complex value over a pair of its parts' type (no complex arrays)
    local pairs2 = lmpio.array(lmpio.DOUBLE, { 1.5, -2, 3, 4 })
    assert.equal(2, fh:write_at(0, pairs2, 2, lmpio.C_DOUBLE_COMPLEX))
    local e = H.error_of(fh.write_at, fh, 0, pairs2, 1, lmpio.C_FLOAT_COMPLEX)
    assert.equal("MPI_ERR_ARG", e.name)
    local bad = {
      { lmpio.DOUBLE, "DOUBLE" }, { lmpio.FLOAT, "FLOAT" }, { lmpio.UNSIGNED, "UNSIGNED" },
      { lmpio.type.contiguous(2, lmpio.FLOAT), "a derived datatype" },
      { lmpio.type.struct({ 1, 1 }, { 0, 4 }, { lmpio.INT, lmpio.FLOAT }), "a derived datatype" },
    }
    for _, b in ipairs(bad) do
      for _, m in ipairs { "write_at", "read_at", "iwrite_at", "write_at_all", "read_at_all" } do
        local e = H.error_of(fh[m], fh, 0, ints, 1, b[1])
        assert.is_true(lmpio.iserror(e), m .. ": " .. tostring(e))
        assert.equal("MPI_ERR_ARG", e.name, m)
        assert.equal(m, e.call)
        assert.matches("bad argument #4 (an array of INT cannot be accessed as " .. b[2], e.message, 1, true)
      end
    end
    assert.equal(1, fh:write_at_all(0, ints, 1, lmpio.INT)) -- every rank goes on
  end)

  it("collective calls raise on every rank with the same class", function()
    local path = H.tmpname()
    local ok, e = pcall(lmpio.open, world, path, "r")
    assert.is_false(ok)
    local same = world:allreduce(e.class, "max") == world:allreduce(e.class, "min")
    assert.is_true(same)
  end)

  it("arguments that must match across ranks are checked", function()
    local path = H.tmpname()
    local mode = (size > 1 and rank == 1) and "wronly create" or "rdwr create"
    local ok, e = pcall(lmpio.open, world, path, mode)
    if size > 1 then
      assert.is_false(ok)
      assert.equal("MPI_ERR_NOT_SAME", e.name)
    else
      assert.is_true(ok)
      e:close()
    end
  end)

  it("an unknown data representation", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local e = H.error_of(fh.set_view, fh, 0, lmpio.BYTE, lmpio.BYTE, "no-such-rep")
    assert.equal("MPI_ERR_UNSUPPORTED_DATAREP", e.name)
    fh:set_view(0, lmpio.BYTE, lmpio.BYTE, "native") -- still usable
  end)

  it("writing to a read-only file and reading a write-only one", function()
    local path = H.tmpname()
    local w = lmpio.open(world, path, "w")
    local e1 = H.error_of(w.read_at, w, 0, 4)
    assert.equal("MPI_ERR_ACCESS", e1.name)
    w:close()
    local r <close> = lmpio.open(world, path, "r")
    local e2 = H.error_of(r.write_at, r, 0, "abc")
    assert.is_true(e2.name == "MPI_ERR_READ_ONLY" or e2.name == "MPI_ERR_ACCESS")
    local e3 = H.error_of(r.set_size, r, 0)
    assert.equal("MPI_ERR_READ_ONLY", e3.name)
  end)

  it("an etype that does not divide the data is an error", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    local e = H.error_of(fh.write_at, fh, 0, "abc")
    assert.equal("MPI_ERR_TYPE", e.name)
  end)

  it("negative offsets and sizes", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    assert.is_true(lmpio.iserror(H.error_of(fh.write_at, fh, -1, "x")))
    assert.is_true(lmpio.iserror(H.error_of(fh.get_byte_offset, fh, -1)))
    assert.is_true(lmpio.iserror(H.error_of(fh.set_size, fh, -5)))
    assert.is_true(lmpio.iserror(H.error_of(fh.seek, fh, -1, "set")))
  end)

  it("wrong argument types are error objects, never crashes", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local calls = {
      function() fh:write_at() end,
      function() fh:write_at(0) end,
      function() fh:write_at(0, nil) end,
      function() fh:write_at(0, 12) end,
      function() fh:read_at(0, {}) end,
      function() fh:read_at(0, -1) end,
      function() fh:write(lmpio.world) end,
      function() fh:set_view(0, "INT") end,
      function() fh:set_view("zero") end,
      function() fh:seek(0, 7) end,
      function() fh:seek("x") end,
      function() fh:get_type_extent("INT") end,
      function() fh.get_size(lmpio.world) end,
      function() fh.get_size(nil) end,
      function() fh:set_info(42) end,
      function() lmpio.open() end,
      function() lmpio.open(world) end,
      function() lmpio.open(world, path, "w+", "info") end,
      function() lmpio.delete() end,
      function() lmpio.array() end,
      function() lmpio.buffer({}) end,
      function() lmpio.world:split("red") end,
      function() lmpio.type.vector() end,
    }
    for i, f in ipairs(calls) do
      local ok, e = pcall(f)
      assert.is_false(ok, "call " .. i)
      -- every error is an object, argument errors MPI_ERR_ARG
      assert.is_true(lmpio.iserror(e), "call " .. i .. ": " .. tostring(e))
      assert.equal("MPI_ERR_ARG", e.name, "call " .. i)
      assert.matches("^bad [as]", e.message) -- bad argument #n or bad self
      assert.is_string(e.call, "call " .. i)
    end
  end)

  it("an argument error of a collective method on one rank raises on every rank", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local last = rank == size - 1
    local bad = {
      {"write_at_all", function() return fh:write_at_all(0, "abcd", last and -1 or 4) end},
      {"write_at_all", function() return fh:write_at_all(last and 0.5 or 0, "abcd") end},
      {"set_view", function() return fh:set_view(0, last and "INT" or lmpio.type.INT) end},
      {"write_ordered", function() return fh:write_ordered(last and {} or "x") end},
      {"read_all", function() return fh:read_all(last and -3 or 4) end},
      {"set_size", function() return fh:set_size(last and "big" or 10) end},
      {"open", function() return lmpio.open(world, path .. "-x", last and "bogus" or "w") end},
    }
    for _, b in ipairs(bad) do
      local ok, e = pcall(b[2])
      assert.is_false(ok, b[1])
      assert.is_true(lmpio.iserror(e), b[1])
      assert.equal("MPI_ERR_ARG", e.name, b[1])
      assert.matches("bad argument", e.message, 1, true)
      assert.equal(b[1], e.call)
      assert.is_true(H.all(e.class == lmpio.ERR_ARG))
    end
    -- the file is still usable by every rank afterwards
    assert.equal(1, fh:write_at_all(rank, "z"))
  end)

  it("an argument error of a nonblocking or split collective on one rank: every rank fails it, no hang", function()
    -- (found by spec/fuzz_methods.lua: the rank with the bad argument joined
    -- with a blocking collective, which never met the others' job started
    -- in the background: the job hung)
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:write_at_all(rank * 8, "abcdefgh")
    local last = rank == size - 1
    local buf = lmpio.buffer(8)
    local cases = {
      {"iread_at_all", function() return fh:iread_at_all(last and 0.5 or 0, 8) end},
      {"iwrite_all", function() return fh:iwrite_all(last and {} or "x") end},
      {"iread_all", function() return fh:iread_all(last and "INT" or 2) end},
      {"read_at_all_begin", function() fh:read_at_all_begin(last and 0.5 or 0, buf) end, fh.read_at_all_end},
      {"write_all_begin", function() fh:write_all_begin(last and -5 or "y") end, fh.write_all_end},
      {"write_ordered_begin", function() fh:write_ordered_begin(last and true or "z") end, fh.write_ordered_end},
      {"read_ordered_begin", function() fh:read_ordered_begin(last and -2 or 2) end, fh.read_ordered_end},
    }
    for _, c in ipairs(cases) do
      -- the start raises on the rank whose argument was wrong, on the others
      -- the start or the completion raises: MPI_ERR_ARG with that message
      local ok, e = pcall(c[2])
      if ok then
        assert.is_false(last, c[1] .. " started on the rank with the bad argument")
        if c[3] then ok, e = pcall(c[3], fh)
        else ok, e = pcall(e.wait, e) end
      elseif c[3] then -- a _begin that raised leaves no split collective active
        assert.equal("MPI_ERR_OTHER", H.error_of(c[3], fh).name, c[1])
      end
      assert.is_false(ok, c[1])
      assert.is_true(lmpio.iserror(e), c[1] .. ": " .. tostring(e))
      assert.equal("MPI_ERR_ARG", e.name, c[1])
      assert.matches("bad argument", e.message, 1, true)
      assert.is_true(H.all(true))
    end
    -- nothing left active anywhere: the file goes on
    assert.equal(1, fh:write_at_all(rank, "w"))
    assert.equal(1, fh:write_ordered("o"))
  end)

  it("an argument error on one rank while another fails in the core: one class and message everywhere", function()
    -- (found by spec/fuzz_methods.lua: with a split collective active, the
    -- rank with the bad argument raised MPI_ERR_ARG, the others the core's
    -- MPI_ERR_OTHER "a split collective is active")
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local last = rank == size - 1
    fh:write_all_begin("abcd")
    local calls = {
      {"read_at_all", function() return fh:read_at_all(last and 1.5 or 0, 4) end},
      {"write_all", function() return fh:write_all(last and {} or "x") end},
      {"set_view", function() return fh:set_view(0, last and "INT" or lmpio.BYTE) end},
    }
    for _, c in ipairs(calls) do
      local ok, e = pcall(c[2])
      assert.is_false(ok, c[1])
      assert.is_true(lmpio.iserror(e), c[1])
      local cls = e.class
      assert.is_true(world:allreduce(cls, "max") == world:allreduce(cls, "min"), c[1] .. ": " .. tostring(e))
      if size > 1 then -- rank 0's failure (the lowest failing rank's) is every rank's
        assert.equal("MPI_ERR_OTHER", e.name, c[1])
        assert.matches("a split collective is active", e.message, 1, true)
      end
    end
    assert.equal(4, fh:write_all_end())
  end)

  it("a file name with an embedded NUL is an error, not cut short", function()
    local path = H.tmpname()
    local e = H.error_of(lmpio.open, world, path .. "\0ignored", "w")
    assert.equal("MPI_ERR_ARG", e.name)
    assert.matches("embedded NUL", e.message, 1, true)
    local ok = pcall(lmpio.delete, path .. "\0x")
    assert.is_false(ok)
    assert.is_nil(io.open(path, "rb")) -- nothing was created under the cut name
  end)

  it("delete of a missing file", function()
    local e = H.error_of(lmpio.delete, H.tmpname() .. "-missing")
    assert.equal("MPI_ERR_NO_SUCH_FILE", e.name)
  end)

  it("split collectives out of order", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    assert.is_true(lmpio.iserror(H.error_of(fh.write_ordered_end, fh)))
  end)

  it("a split collective whose _end raises lets go of its buffer; a mismatched _end keeps it", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:write_at_all(rank * 8, "abcdefgh")
    local a = lmpio.array(lmpio.BYTE, 8)
    -- a negative offset fails the transfer (its _end raises, or its _begin
    -- when it runs at once)
    local begun = pcall(fh.read_at_all_begin, fh, -1, a)
    if begun then
      -- an _end of another kind does not end it: the buffer stays held
      assert.equal("MPI_ERR_OTHER", H.error_of(fh.write_all_end, fh).name)
      assert.matches("held by a pending read_at_all_begin", H.error_of(function() a[1] = 1 end), 1, true)
      assert.equal("MPI_ERR_ARG", H.error_of(fh.read_at_all_end, fh).name)
    end
    -- ended: the buffer is the script's again
    a[1] = 65
    assert.equal(65, a[1])
    local b, n = fh:read_at_all(rank * 8, a)
    assert.equal(8, n)
    assert.equal("abcdefgh", b:tostring())
  end)
end)
