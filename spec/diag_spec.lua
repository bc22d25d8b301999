local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- The error of fn(...) (which must fail) as a string.
local function fails(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

describe("safety and diagnostics", function()
  after_each(H.cleanup)

  it("an array written while an iwrite holds it raises, naming the call", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.DOUBLE, lmpio.DOUBLE)
    local a = lmpio.array(lmpio.DOUBLE, { 1, 2, 3, 4 })
    local req = fh:iwrite_at(rank * 4, a)
    local msg = fails(function() a[1] = 5 end)
    assert.truthy(msg:find("array is held by a pending iwrite_at; wait for its request first", 1, true), msg)
    assert.truthy(fails(function() a:fill(0) end):find("held by a pending iwrite_at", 1, true))
    assert.truthy(fails(function() a:set(2, 9) end):find("held", 1, true))
    assert.truthy(fails(fh.read_at, fh, rank * 4, a):find("held", 1, true)) -- a read into it
    -- a view of the same memory, a reshaped one, a record view: covered
    assert.truthy(fails(function() a:sub(2, 3)[1] = 7 end):find("held", 1, true))
    assert.truthy(fails(function() a:reshape({ 2, 2 })[{ 1, 1 }] = 7 end):find("held", 1, true))
    -- reading it is fine while a write holds it, and so is writing it out again
    assert.equal(1, a[1])
    assert.equal(10, a:sum())
    assert.equal(4, fh:write_at(size * 4 + rank * 4, a))
    assert.equal(4, req:wait())
    a[1] = 5 -- the script's again
    assert.equal(5, a[1])
    -- a:sub views of other elements are not held
    local b = lmpio.array(lmpio.DOUBLE, 8)
    local r2 = fh:iwrite_at(rank * 4, b:sub(1, 4))
    b[5] = 1
    b:sub(5, 8):fill(2)
    assert.truthy(fails(function() b[4] = 1 end):find("held", 1, true))
    r2:wait()
    b[4] = 1
  end)

  it("a pending read holds its array against reads and writes; test, waitall and close let go", function()
    local path = H.tmpname()
    local fh = lmpio.open(world, path, "w+")
    fh:set_view(0, lmpio.INT, lmpio.INT)
    fh:write_at_all(rank * 2, lmpio.array(lmpio.INT, { rank, rank }))
    local a = lmpio.array(lmpio.INT, 2)
    local req = fh:iread_at(rank * 2, a)
    assert.truthy(fails(function() return a[1] end):find("held by a pending iread_at", 1, true))
    assert.truthy(fails(a.tostring, a):find("held", 1, true))
    assert.truthy(fails(fh.write_at, fh, 0, a):find("held", 1, true)) -- writing it out reads it
    assert.equal(2, #a) -- its size is not its data
    local done
    repeat done = req:test() until done
    assert.equal(rank, a[1])
    lmpio.waitall({ fh:iread_at(rank * 2, a) })
    assert.equal(rank, a[2])
    -- a split collective holds until its _end
    fh:write_at_all_begin(rank * 2, a)
    assert.truthy(fails(function() a[1] = 0 end):find("held by a pending write_at_all_begin; end it first", 1, true))
    fh:write_at_all_end(a)
    a[1] = rank
    -- a request never waited for lets go when the file closes
    local b = lmpio.array(lmpio.INT, 2)
    local keep = fh:iread_at(rank * 2, b)
    fh:close()
    b[1] = 42
    assert.equal(42, b[1])
    assert.truthy(keep)
  end)

  it("a call that fails holds nothing", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+")
    local a = lmpio.array(lmpio.INT, 2)
    assert.is_false(pcall(fh.iwrite_at, fh, -1, a)) -- negative offset
    a[1] = 3
    assert.equal(3, a[1])
  end)

  it("a misspelt hint is listed once in get_info's lmpio_unknown_hints", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+",
      { strping_unit = 65536, access_style = "read_once", lmpio_hint_warnings = "disable" })
    assert.equal("strping_unit", fh:get_info().lmpio_unknown_hints)
    fh:set_info({ strping_unit = 65536, cb_bufer_size = 1024 })
    assert.equal("strping_unit,cb_bufer_size", fh:get_info().lmpio_unknown_hints)
    local ok = lmpio.open(world, H.tmpname(), "w+", { striping_unit = 65536 })
    assert.is_nil(ok:get_info().lmpio_unknown_hints)
    ok:close()
  end)

  it("fh:stats() of sieved and direct calls", function()
    local path = H.tmpname()
    local fh <close> = lmpio.open(world, path, "w+", { romio_ds_read = "enable", romio_ds_write = "enable" })
    local s0 = fh:stats()
    assert.equal(0, s0.POSIX_READS)
    assert.equal(0, s0.MPIIO_INDEP_WRITES)
    -- direct: contiguous
    fh:write_at(rank * 800, lmpio.array(lmpio.DOUBLE, 100))
    fh:read_at(rank * 800, 800)
    local s = fh:stats()
    assert.equal(1, s.MPIIO_INDEP_WRITES)
    assert.equal(1, s.MPIIO_INDEP_READS)
    assert.equal(800, s.LMPIO_DIRECT_BYTES_WRITTEN)
    assert.equal(800, s.LMPIO_DIRECT_BYTES_READ)
    assert.equal(0, s.LMPIO_SIEVED_BYTES_READ)
    assert.equal(0, s.LMPIO_SIEVED_BYTES_WRITTEN)
    assert.equal(0.0, s.LMPIO_SIEVE_READ_AMPLIFICATION)
    assert.equal("integer", math.type(s.POSIX_BYTES_WRITTEN))
    assert.equal("float", math.type(s.MPIIO_F_WRITE_TIME))
    -- sieved: every fourth int of a region of its own
    fh:set_view(size * 800 + rank * 4096, lmpio.INT, lmpio.type.resized(lmpio.INT, 0, 16))
    fh:write_at(0, lmpio.array(lmpio.INT, 64))
    fh:read_at(0, 64, lmpio.INT)
    s = fh:stats()
    assert.equal(256, s.LMPIO_SIEVED_BYTES_READ)
    assert.equal(256, s.LMPIO_SIEVED_BYTES_WRITTEN)
    assert.is_true(s.LMPIO_SIEVE_READ_AMPLIFICATION > 3, tostring(s.LMPIO_SIEVE_READ_AMPLIFICATION))
    assert.is_true(s.LMPIO_SIEVE_WRITE_AMPLIFICATION > 1)
    assert.equal(800, s.LMPIO_DIRECT_BYTES_READ) -- unchanged
    assert.is_true(s.LMPIO_LOCKS >= 1)
    -- collective and nonblocking calls count as such
    fh:write_at_all(0, lmpio.array(lmpio.INT, 4))
    fh:iwrite_at(0, lmpio.array(lmpio.INT, 4)):wait()
    s = fh:stats()
    assert.equal(1, s.MPIIO_COLL_WRITES)
    assert.equal(1, s.MPIIO_NB_WRITES)
    assert.equal(2, s.MPIIO_INDEP_WRITES)
  end)
end)
