-- Arrays in data access calls: short reads, views, shapes and records.
local H = require "spec.helper"
local lmpio = H.lmpio
local T = lmpio.type
local world, rank, size = H.world, H.rank, H.size

-- A file of the given bytes, written by rank 0, open on every rank.
local function file_of(bytes)
  local path = H.tmpname("arr")
  local fh = lmpio.open(world, path, "w+")
  if rank == 0 then fh:write_at(0, bytes) end
  fh:sync()
  world:barrier()
  fh:sync()
  return fh, path
end

describe("arrays in data access calls", function()
  after_each(H.cleanup)

  it("a read from a count at the end of the file returns the items read", function()
    local fh <close> = file_of("hello world") -- 11 bytes
    local b, n = fh:read_at(0, 100)
    assert.equal(11, n)
    assert.equal(11, #b)
    assert.equal(11, b:nbytes())
    assert.equal("hello world", b:tostring())
    assert.equal(11, #b:totable())
    local k = 0
    for _ in pairs(b) do k = k + 1 end
    assert.equal(11, k)
    assert.is_nil(b[12])
    b, n = fh:read_at_all(6, 100)
    assert.equal("world", b:tostring())
    assert.equal(5, n)
    b, n = fh:read_at(20, 8)
    assert.equal(0, #b)
    assert.equal("", b:tostring())
    -- whole items of a typed read: 11 bytes hold one double
    local d, m = fh:read_at(0, 4, lmpio.DOUBLE)
    assert.equal(1, m)
    assert.equal(1, #d)
    assert.equal(8, d:nbytes())
    assert.equal(string.unpack("=d", "hello wo"), d[1])
    -- a buffer the caller gives keeps its size and its bytes past the end
    local mine = lmpio.buffer(string.rep("#", 16))
    local same, c = fh:read_at(0, mine)
    assert.equal(mine, same)
    assert.equal(11, c)
    assert.equal(16, #mine)
    assert.equal("hello world#####", mine:tostring())
  end)

  it("short reads with the individual and shared pointers, ordered, nonblocking and split", function()
    local fh <close> = file_of("hello world")
    local b, n = fh:read(100)
    assert.equal(11, #b)
    assert.equal(11, n)
    fh:seek(0)
    b, n = fh:read_all(4, lmpio.INT) -- 11 bytes: 2 whole ints
    assert.equal(2, n)
    assert.equal(2, #b)
    assert.equal(string.unpack("=i4", "hell"), b[1])
    assert.equal(string.unpack("=i4", "o wo"), b[2])
    -- shared pointer: one rank gets the 11 bytes, the others nothing
    world:barrier()
    b, n = fh:read_shared(100)
    assert.equal(n, #b)
    assert.equal(11, world:allreduce(n))
    assert.is_true(H.all(n == 0 or b:tostring() == "hello world"))
    fh:seek_shared(0)
    b, n = fh:read_ordered(100)
    assert.equal(rank == 0 and 11 or 0, #b)
    assert.equal(#b, n)
    -- nonblocking
    b, n = fh:iread_at(2, 100):wait()
    assert.equal("llo world", b:tostring())
    assert.equal(9, n)
    local bt, nt = fh:iread_at_all(8, 10):wait()
    assert.equal("rld", bt:tostring())
    assert.equal(3, nt)
    fh:seek(0)
    b, n = fh:iread(30, lmpio.SHORT):wait()
    assert.equal(5, n)
    assert.equal(5, #b)
    -- split collectives
    fh:read_at_all_begin(7, 64)
    b, n = fh:read_at_all_end()
    assert.equal("orld", b:tostring())
    assert.equal(4, n)
    fh:seek(0)
    fh:read_all_begin(3, lmpio.FLOAT)
    b, n = fh:read_all_end()
    assert.equal(2, #b)
    fh:seek_shared(0)
    fh:read_ordered_begin(50)
    b, n = fh:read_ordered_end()
    assert.equal(rank == 0 and 11 or 0, #b)
  end)

  it("a read of a derived type from a count keeps the span of the items read", function()
    local fh <close> = file_of(string.rep("\1", 10))
    local pair = T.vector(2, 1, 2, lmpio.BYTE) -- 1 byte, a hole, 1 byte: extent 3
    local b, n = fh:read_at(0, 8, pair)
    assert.equal(5, n)
    assert.equal(3 * 4 + 3, #b)
    assert.equal(string.rep("\1\0\1", 5), b:tostring())
  end)

  it("a view reads into and writes from the middle of an array", function()
    local path = H.tmpname("sub")
    local fh <close> = lmpio.open(world, path, "w+")
    local src = lmpio.array(lmpio.DOUBLE, 8)
    for i = 1, 8 do src[i] = rank * 10 + i end
    -- elements 3..5 only, at this rank's place in the file
    assert.equal(3, fh:write_at_all(rank * 24, src:sub(3, 5)))
    local a = lmpio.array(lmpio.DOUBLE, 10):fill(-1)
    local v = a:sub(4, 6)
    local got, n = fh:read_at_all(rank * 24, v)
    assert.equal(v, got)
    assert.equal(3, n)
    assert.same({ -1, -1, -1, rank * 10 + 3, rank * 10 + 4, rank * 10 + 5, -1, -1, -1, -1 }, a:totable())
    -- a view given a count and a datatype: the count must fit the view
    local e = H.error_of(fh.read_at, fh, 0, a:sub(9, 10), 3, lmpio.DOUBLE)
    assert.matches("need 24 bytes but the buffer has 16", tostring(e))
    -- the neighbour's block into the last three elements, nonblocking; the
    -- request keeps the view (and through it the array) alive
    local right = (rank + 1) % size
    local req = fh:iread_at(right * 24, lmpio.array(lmpio.DOUBLE, 10):sub(8, 10))
    collectgarbage()
    local w, m = req:wait()
    assert.equal(3, m)
    assert.same({ right * 10 + 3, right * 10 + 4, right * 10 + 5 }, w:totable())
    fh:close()
    world:barrier()
    if rank == 0 then
      local bytes = H.slurp(path)
      local want = {}
      for r = 0, size - 1 do want[#want + 1] = string.pack("=ddd", r * 10 + 3, r * 10 + 4, r * 10 + 5) end
      assert.equal(table.concat(want), bytes)
    end
  end)

  it("shaped arrays in C and Fortran order agree with subarray views written by every rank", function()
    local rows, cols = 2 * size, 3
    local function value(i, j) return 100 * i + j end -- 1-based global indices
    for _, order in ipairs { "c", "fortran" } do
      local path = H.tmpname("nd")
      local fh <close> = lmpio.open(world, path, "w+")
      -- each rank owns rows 2r+1 .. 2r+2 of the global matrix
      local mine = lmpio.array(lmpio.DOUBLE, { shape = { 2, cols }, order = order })
      for i = 1, 2 do
        for j = 1, cols do mine:set(i, j, value(2 * rank + i, j)) end
      end
      local sub = T.subarray({ rows, cols }, { 2, cols }, { 2 * rank, 0 }, lmpio.DOUBLE, order)
      fh:set_view(0, lmpio.DOUBLE, sub)
      assert.equal(2 * cols, fh:write_all(mine))
      fh:set_view(0, lmpio.BYTE, lmpio.BYTE)
      -- the whole matrix, read into a shaped array of the same order
      local g = lmpio.array(lmpio.DOUBLE, { shape = { rows, cols }, order = order })
      fh:read_at_all(0, g)
      local ok = true
      for i = 1, rows do
        for j = 1, cols do
          if g:get(i, j) ~= value(i, j) or g[{ i, j }] ~= value(i, j) then ok = false end
        end
      end
      assert.is_true(ok)
      -- the other order sees the transpose over the same bytes
      local other = order == "c" and "F" or "C"
      local t = lmpio.array(lmpio.DOUBLE, { shape = { cols, rows }, order = other })
      fh:read_at_all(0, t)
      for i = 1, rows do
        for j = 1, cols do
          if t:get(j, i) ~= value(i, j) then ok = false end
        end
      end
      assert.is_true(ok)
      -- and the storage order is the one named: C has row 1 first
      local first = fh:read_at_all(0, 2, lmpio.DOUBLE)
      if order == "c" then
        assert.same({ value(1, 1), value(1, 2) }, first:totable())
      else
        assert.same({ value(1, 1), value(2, 1) }, first:totable())
      end
      fh:close()
    end
  end)

  it("records written and read through their struct datatype, checked bytewise", function()
    local rt = lmpio.recordtype { { "id", lmpio.INT }, { "x", lmpio.DOUBLE }, { "ok", lmpio.C_BOOL },
      { "v", lmpio.FLOAT, 2 } }
    local function fields(id, first) return id, id + 0.5, first and 1 or 0, id, -id end
    -- memory: the C layout, padding included (zeroed): 32 bytes a record
    local function memory(q, k) return string.pack("=i4xxxxdBxxxffxxxx", fields(2 * q + k, k == 1)) end
    -- the data alone: 4 + 8 + 1 + 8 = 21 bytes a record
    local function packed(q, k) return string.pack("=i4dBff", fields(2 * q + k, k == 1)) end
    local r = lmpio.records(rt, 2)
    for k = 1, 2 do
      local id = 2 * rank + k
      r[k] = { id = id, x = id + 0.5, ok = k == 1, v = { id, -id } }
    end
    assert.equal(memory(rank, 1) .. memory(rank, 2), r:tostring())
    assert.equal(21, rt:size())
    assert.equal(32, rt:extent())

    -- through a contiguous (byte) view, the file holds the data without padding
    local path = H.tmpname("rec")
    local fh = lmpio.open(world, path, "w+")
    assert.equal(2, fh:write_at_all(rank * 42, r))
    -- as an explicit memory datatype, from a view of one record
    assert.equal(1, fh:write_at_all(size * 42 + rank * 21, r[1], 1, rt))
    fh:close()
    world:barrier()
    if rank == 0 then
      local want = {}
      for q = 0, size - 1 do want[#want + 1] = packed(q, 1) .. packed(q, 2) end
      for q = 0, size - 1 do want[#want + 1] = packed(q, 1) end
      assert.equal(table.concat(want), H.slurp(path))
    end
    world:barrier()
    local rd <close> = lmpio.open(world, path, "r")
    -- a read from a count of the record type returns records, as many as the file holds
    local back, n = rd:read_at_all(0, 3 * size + 5, rt)
    assert.equal(3 * size, n)
    assert.equal(3 * size, #back)
    assert.equal(rt, back:type())
    local right = (rank + 1) % size
    assert.equal(2 * right + 2, back[2 * right + 2].id)
    assert.equal(2 * right + 1.5, back[2 * right + 1].x)
    assert.is_true(back[2 * right + 1].ok)
    assert.is_false(back[2 * right + 2].ok)
    assert.same({ 2 * right + 2, -(2 * right + 2) }, back[2 * right + 2].v:totable())
    assert.equal(r:tostring(), back:sub(2 * rank + 1, 2 * rank + 2):tostring())
    -- into records the caller gives, from the middle
    local into = lmpio.records(rt, 4)
    rd:read_at_all(rank * 42, into:sub(2, 3))
    assert.same({ 0, 2 * rank + 1, 2 * rank + 2, 0 }, { into[1].id, into[2].id, into[3].id, into[4].id })
    rd:close()

    -- with the record type as etype and filetype, the file has the record's
    -- layout: its holes are the padding (never written, so zeros)
    local path2 = H.tmpname("rec")
    local fv = lmpio.open(world, path2, "w+")
    fv:set_view(0, rt, rt)
    assert.equal(2, fv:write_at_all(2 * rank, r))
    local again = fv:read_at_all(2 * rank, 2, rt)
    assert.equal(r:tostring(), again:tostring())
    fv:close()
    world:barrier()
    if rank == 0 then
      local want = {}
      for q = 0, size - 1 do want[#want + 1] = memory(q, 1) .. memory(q, 2) end
      local all = table.concat(want)
      assert.equal(all:sub(1, #all - 4), H.slurp(path2)) -- the file ends with the last datum
    end
  end)

  it("records refuse I/O once their datatype is freed", function()
    local rt = lmpio.recordtype { { "a", lmpio.INT } }
    local r = lmpio.records(rt, 1)
    rt:free()
    local path = H.tmpname("freed")
    local fh <close> = lmpio.open(world, path, "w+")
    local e = H.error_of(fh.write_at, fh, 0, r)
    assert.matches("the record datatype was freed", tostring(e))
    r[1].a = 5 -- the fields need no datatype
    assert.equal(5, r[1].a)
  end)
end)
