-- .npy files (lmpio.npy.open): written by every rank through a subarray
-- view and checked with numpy; numpy's own files (Fortran order,
-- big-endian, 0-d, versions 2.0 and 3.0, every basic dtype) read through
-- the module; and the errors, the same on every rank.  numpy runs on rank 0
-- only (python3-numpy, .ci/deps.sh).
local H = require "spec.helper"
local lmpio = H.lmpio
local world, rank, size = H.world, H.rank, H.size

-- Debian's python3 (python3-numpy is installed for it), else the first one.
local PY = io.open("/usr/bin/python3") and "/usr/bin/python3" or "python3"

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs a python3 program with numpy on rank 0; every rank gets whether it
-- succeeded and what it printed.
local function python(code)
  local ok, out = false, ""
  if rank == 0 then
    -- (save: numpy.save to a name not ending in .npy would add it)
    local prelude = "import numpy\ndef save(p, a):\n  with open(p, 'wb') as f: numpy.save(f, a)\n"
    local p = assert(io.popen(PY .. " -c " .. quote(prelude .. code) .. " 2>&1"))
    out = p:read("a")
    ok = p:close() and true or false
  end
  return world:bcast(ok), world:bcast(out)
end

-- Writes bytes as the whole file (rank 0), visible to every rank after.
local function put(path, bytes)
  if rank == 0 then
    local f = assert(io.open(path, "wb"))
    f:write(bytes)
    f:close()
  end
  world:barrier()
end

-- A hand-made .npy: preamble of version major, the dictionary, data.
local function npy_bytes(dict, data, major)
  major = major or 1
  local pre = major == 1 and 10 or 12
  local pad = (64 - (pre + #dict + 1) % 64) % 64
  local text = dict .. string.rep(" ", pad) .. "\n"
  return "\x93NUMPY" .. string.char(major, 0) .. string.pack(major == 1 and "<I2" or "<I4", #text) .. text .. (data or "")
end

local function lmpio_error(fn, ...)
  local e = H.error_of(fn, ...)
  assert.is_true(lmpio.iserror(e), "not an lmpio error object: " .. tostring(e))
  return e
end

-- The error that npy.open raises on every rank, with its class and a
-- message matching pattern (plain).
local function open_fails(name, text, ...)
  local e = lmpio_error(lmpio.npy.open, ...)
  assert.equal(name, e.name, e.message)
  assert.is_truthy(e.message:find(text, 1, true), e.message)
  assert.is_true(H.all(true)) -- every rank got here: no rank is left waiting
  return e
end

describe("lmpio.npy", function()
  after_each(H.cleanup)

  -- Rows of an m x n array in blocks of rows per rank (C order) or
  -- columns per rank (Fortran order), element (i, j) = i * 1000 + j; numpy
  -- checks every file in one run (python3 takes a second to start).
  it("writes arrays in C and F order, each rank its block, that numpy loads", function()
    local checks = {}
    for _, case in ipairs({
      { t = lmpio.DOUBLE, dtype = "<f8", order = "C" },
      { t = lmpio.INT, dtype = "<i4", order = "C" },
      { t = lmpio.FLOAT, dtype = "<f4", order = "F" },
      { t = lmpio.INT64_T, dtype = "<i8", order = "F" },
      { t = lmpio.UINT16_T, dtype = "<u2", order = "C" },
      { t = lmpio.DOUBLE, dtype = ">f8", order = "C", datarep = "external32" },
      { t = lmpio.INT, dtype = ">i4", order = "F", datarep = "external32" },
    }) do
      local path = H.tmpname("w.npy")
      local per = 3
      local m, n = per * size, 5
      if case.order == "F" then m, n = 5, per * size end
      local fh <close>, desc = lmpio.npy.open(world, path, "w", { type = case.t, shape = { m, n }, order = case.order,
                                                                 datarep = case.datarep })
      assert.equal(case.t, desc.type)
      assert.same({ m, n }, desc.shape)
      assert.equal(case.order, desc.order)
      assert.equal(case.datarep or "native", desc.datarep)
      assert.equal(0, desc.offset % 64)
      -- the view is already (offset, type, type, datarep)
      local disp, etype, ftype, rep = fh:get_view()
      assert.equal(desc.offset, disp)
      assert.equal(case.datarep or "native", rep)
      assert.equal(case.t:size(), etype:size())
      assert.equal(case.t:size(), ftype:extent())
      local sub, starts
      if case.order == "C" then
        sub, starts = { per, n }, { per * rank, 0 }
      else
        sub, starts = { m, per }, { 0, per * rank }
      end
      fh:set_view(desc.offset, desc.type, lmpio.type.subarray({ m, n }, sub, starts, desc.type,
        case.order == "C" and lmpio.ORDER_C or lmpio.ORDER_FORTRAN), desc.datarep)
      local a = lmpio.array(case.t, per * (case.order == "C" and n or m))
      local k = 0
      local function at(i, j) k = k + 1; a[k] = i * 1000 + j end
      if case.order == "C" then
        for i = starts[1], starts[1] + per - 1 do for j = 0, n - 1 do at(i, j) end end
      else
        for j = starts[2], starts[2] + per - 1 do for i = 0, m - 1 do at(i, j) end end
      end
      fh:write_at_all(0, a)
      fh:close()
      checks[#checks + 1] = ("check(%q, %d, %d, %q, %q)"):format(path, m, n, case.dtype, case.order)
    end
    local ok, out = python([[
def check(path, m, n, dtype, order):
  a = numpy.load(path)
  assert a.shape == (m, n), (path, a.shape)
  assert a.dtype == numpy.dtype(dtype), (path, a.dtype)
  assert a.flags[order + '_CONTIGUOUS'], (path, a.flags)
  assert (a == numpy.fromfunction(lambda i, j: i * 1000 + j, (m, n))).all(), (path, a)
  print(dtype, order, "ok")
]] .. table.concat(checks, "\n"))
    assert.is_true(ok, out)
    assert.equal(#checks, select(2, out:gsub(" ok\n", "")), out)
  end)

  it("writes one value (shape {}) and bools, bytes and complex numbers numpy reads", function()
    local checks = {}
    local path = H.tmpname("s.npy")
    local fh, desc = lmpio.npy.open(world, path, "w", { type = lmpio.DOUBLE, shape = {} })
    if rank == 0 then fh:write_at(0, lmpio.array(lmpio.DOUBLE, { 2.5 })) end
    fh:close()
    assert.same({}, desc.shape)
    checks[1] = ("a = numpy.load(%q); assert a.shape == () and a == 2.5, a"):format(path)
    for _, t in ipairs({ { lmpio.C_BOOL, "|b1", "[True, False]" }, { lmpio.UINT8_T, "|u1", "[1, 0]" },
                         { lmpio.INT8_T, "|i1", "[1, 0]" } }) do
      path = H.tmpname("s.npy")
      fh = lmpio.npy.open(world, path, "w", { type = t[1], shape = { 2 } })
      if rank == 0 then fh:write_at(0, lmpio.array(t[1], t[1] == lmpio.C_BOOL and { true, false } or { 1, 0 })) end
      fh:close()
      checks[#checks + 1] = ("a = numpy.load(%q); assert a.dtype == numpy.dtype(%q), a.dtype; assert a.tolist() == %s, a")
        :format(path, t[2], t[3])
    end
    path = H.tmpname("s.npy")
    fh = lmpio.npy.open(world, path, "w", { type = lmpio.C_DOUBLE_COMPLEX, shape = { 1 } })
    if rank == 0 then fh:write_at(0, lmpio.array(lmpio.DOUBLE, { 1.5, -2 }), 1, lmpio.C_DOUBLE_COMPLEX) end
    fh:close()
    checks[#checks + 1] = ("a = numpy.load(%q); assert a.dtype == numpy.complex128 and a[0] == 1.5-2j, a"):format(path)
    local ok, out = python(table.concat(checks, "\n") .. "\nprint('ok')")
    assert.is_true(ok, out)
    assert.equal("ok\n", out)
  end)

  it("pads the header to a multiple of 64 bytes, version 2.0 only when 1.0 cannot hold it", function()
    local path = H.tmpname("h.npy")
    for _, shape in ipairs({ { 1 }, { 123456789, 0 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 } }) do
      local fh, desc = lmpio.npy.open(world, path, "w", { type = lmpio.FLOAT, shape = shape })
      fh:close()
      assert.equal(0, desc.offset % 64)
      local bytes = H.slurp(path)
      assert.equal(desc.offset, #bytes)
      assert.equal("\x93NUMPY\1\0", bytes:sub(1, 8))
      assert.equal("\n", bytes:sub(-1))
    end
    -- 30000 dimensions of 1: a dictionary of about 90000 bytes
    local shape = {}
    for i = 1, 30000 do shape[i] = 1 end
    local fh, desc = lmpio.npy.open(world, path, "w", { type = lmpio.INT, shape = shape })
    fh:write_at_all(0, lmpio.array(lmpio.INT, { rank == 0 and 42 or nil }))
    fh:close()
    assert.equal(0, desc.offset % 64)
    local bytes = H.slurp(path)
    assert.equal("\x93NUMPY\2\0", bytes:sub(1, 8))
    assert.equal(desc.offset - 12, string.unpack("<I4", bytes, 9))
    local fh2 <close>, d2 = lmpio.npy.open(world, path, "r")
    assert.equal(30000, #d2.shape)
    assert.equal(desc.offset, d2.offset)
    assert.equal(42, fh2:read_at_all(0, 1, d2.type)[1])
  end)

  it("reads numpy's files: Fortran-order int32, big-endian float64, 0-d, versions 2.0 and 3.0", function()
    local f, be, zd, v2, v3 = H.tmpname("f.npy"), H.tmpname("be.npy"), H.tmpname("0d.npy"), H.tmpname("v2.npy"),
      H.tmpname("v3.npy")
    local ok, out = python(([[
from numpy.lib import format
save(%q, numpy.asfortranarray(numpy.arange(12, dtype=numpy.int32).reshape(3, 4)))
save(%q, (numpy.arange(7) * 1.5).astype('>f8'))
save(%q, numpy.float64(-0.25))
with open(%q, 'wb') as fp: format.write_array(fp, numpy.arange(5, dtype='<i8'), version=(2, 0))
with open(%q, 'wb') as fp: format.write_array(fp, numpy.arange(5, dtype='<u4'), version=(3, 0))
]]):format(f, be, zd, v2, v3))
    assert.is_true(ok, out)
    -- Fortran order: the file holds the columns one after the other
    local fh <close>, d = lmpio.npy.open(world, f, "r")
    assert.equal(lmpio.INT, d.type)
    assert.same({ 3, 4 }, d.shape)
    assert.equal("F", d.order)
    assert.equal("native", d.datarep)
    local a = fh:read_at_all(0, 12, d.type)
    assert.same({ 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11 }, a:totable())
    -- a subarray view: column 1..2 of rows 1..2 (0-based), Fortran order
    fh:set_view(d.offset, d.type, lmpio.type.subarray(d.shape, { 2, 2 }, { 1, 1 }, d.type, lmpio.ORDER_FORTRAN))
    assert.same({ 5, 9, 6, 10 }, fh:read_at_all(0, 4, d.type):totable())
    fh:close()
    -- big-endian: through external32
    local fb <close>, db = lmpio.npy.open(world, be, "r")
    assert.equal(lmpio.DOUBLE, db.type)
    assert.same({ 7 }, db.shape)
    assert.equal("C", db.order)
    assert.equal("external32", db.datarep)
    local _, _, _, rep = fb:get_view()
    assert.equal("external32", rep)
    assert.same({ 0, 1.5, 3, 4.5, 6, 7.5, 9 }, fb:read_at_all(0, 7, db.type):totable())
    fb:close()
    -- 0-d: one value
    local fz <close>, dz = lmpio.npy.open(world, zd, "r")
    assert.same({}, dz.shape)
    local z, nz = fz:read_at_all(0, 2, dz.type)
    assert.equal(1, nz)
    assert.equal(-0.25, z[1])
    fz:close()
    for _, c in ipairs({ { v2, lmpio.INT64_T, 2 }, { v3, lmpio.UNSIGNED, 3 } }) do
      local fv <close>, dv = lmpio.npy.open(world, c[1], "r+")
      assert.equal(c[2], dv.type)
      assert.equal(c[3], H.slurp(c[1]):byte(7)) -- the version numpy wrote
      assert.equal(12 + string.unpack("<I4", H.slurp(c[1]), 9), dv.offset)
      assert.same({ 0, 1, 2, 3, 4 }, fv:read_at_all(0, 5, dv.type):totable())
      fv:close()
    end
  end)

  it("reads every basic dtype numpy writes, in either byte order", function()
    local cases = {
      { "?", lmpio.C_BOOL, { true, false, true } }, { "i1", lmpio.INT8_T, { -1, 2, -3 } }, { "u1", lmpio.UINT8_T, { 1, 2, 255 } },
      { "<i2", lmpio.SHORT, { -1, 2, -300 } }, { ">u2", lmpio.UNSIGNED_SHORT, { 1, 2, 65535 } },
      { ">i4", lmpio.INT, { -1, 2, -3 } }, { "<u4", lmpio.UNSIGNED, { 1, 2, 4000000000 } },
      { ">i8", lmpio.INT64_T, { -1, 2, -(1 << 40) } }, { "<u8", lmpio.UINT64_T, { 1, 2, 1 << 40 } },
      { ">f4", lmpio.FLOAT, { 0.5, -2, 1.25 } }, { "<f8", lmpio.DOUBLE, { 0.1, -2, 1e300 } },
    }
    local saves = {}
    for k, c in ipairs(cases) do
      c.path = H.tmpname("t.npy")
      local vals = {}
      for i, v in ipairs(c[3]) do vals[i] = tostring(v):gsub("^true$", "True"):gsub("^false$", "False") end
      saves[k] = ("save(%q, numpy.array([%s], dtype=%q))"):format(c.path, table.concat(vals, ", "), c[1])
    end
    local cpath = H.tmpname("t.npy")
    saves[#saves + 1] = ("save(%q, numpy.array([1.5-2j, 0.25j], dtype='>c16'))"):format(cpath)
    local ok, out = python(table.concat(saves, "\n"))
    assert.is_true(ok, out)
    for _, c in ipairs(cases) do
      local fh <close>, d = lmpio.npy.open(world, c.path, "r")
      assert.equal(c[2], d.type, c[1])
      assert.equal(c[1]:sub(1, 1) == ">" and "external32" or "native", d.datarep, c[1])
      assert.same(c[3], fh:read_at_all(0, 3, d.type):totable(), c[1])
      fh:close()
    end
    -- complex: bytes through a buffer (the array type holds no complex)
    local fh <close>, d = lmpio.npy.open(world, cpath, "r")
    assert.equal(lmpio.C_DOUBLE_COMPLEX, d.type)
    assert.equal("external32", d.datarep)
    local b = lmpio.buffer(32)
    fh:read_at_all(0, b, 2, d.type)
    local v = { string.unpack("=dddd", b:tostring()) }
    assert.same({ 1.5, -2, 0, 0.25 }, { v[1], v[2], v[3], v[4] })
  end)

  it("refuses a wrong description with MPI_ERR_ARG on every rank", function()
    local path = H.tmpname("e.npy")
    open_fails("MPI_ERR_ARG", "lacks its type", world, path, "w", { shape = { 2 } })
    open_fails("MPI_ERR_ARG", "lacks its shape", world, path, "w", { type = lmpio.DOUBLE })
    open_fails("MPI_ERR_ARG", "writing needs a description", world, path, "w")
    open_fails("MPI_ERR_ARG", "is a string, not a datatype", world, path, "w", { type = "DOUBLE", shape = { 2 } })
    open_fails("MPI_ERR_ARG", "derived datatype", world, path, "w",
               { type = lmpio.type.contiguous(2, lmpio.INT), shape = { 2 } })
    open_fails("MPI_ERR_ARG", "type LONG_DOUBLE has no .npy dtype", world, path, "w",
               { type = lmpio.LONG_DOUBLE, shape = { 2 } })
    open_fails("MPI_ERR_ARG", "dimension 2 of the shape is -1", world, path, "w", { type = lmpio.INT, shape = { 2, -1 } })
    open_fails("MPI_ERR_ARG", "dimension 1 of the shape is 1.5", world, path, "w", { type = lmpio.INT, shape = { 1.5 } })
    open_fails("MPI_ERR_ARG", "more bytes than a file can", world, path, "w",
               { type = lmpio.DOUBLE, shape = { 1 << 40, 1 << 30 } })
    open_fails("MPI_ERR_ARG", "order is 'K'", world, path, "w", { type = lmpio.INT, shape = { 2 }, order = "K" })
    open_fails("MPI_ERR_ARG", "unknown field 'shap'", world, path, "w", { type = lmpio.INT, shap = { 2 } })
    open_fails("MPI_ERR_ARG", "type LONG in external32: write it in native", world, path, "w",
               { type = lmpio.LONG, shape = { 2 }, datarep = "external32" })
    open_fails("MPI_ERR_ARG", "datarep 'internal'", world, path, "w", { type = lmpio.INT, shape = { 2 }, datarep = "internal" })
    open_fails("MPI_ERR_ARG", "mode 'a'", world, path, "a", { type = lmpio.INT, shape = { 2 } })
    open_fails("MPI_ERR_ARG", "the path is a number", world, 7, "r")
    -- a header longer than a read would take (16 MiB): 1.5 million
    -- dimensions (0, then 1000000000: 18 MB)
    local many = { 0 }
    for i = 2, 1500000 do many[i] = 1000000000 end
    open_fails("MPI_ERR_ARG", "more than lmpio reads", world, path, "w", { type = lmpio.BYTE, shape = many })
    many = nil
    -- on one rank only: every rank raises it, naming that rank
    local bad = size - 1
    local e = open_fails("MPI_ERR_ARG", "lacks its shape", world, path, "w",
                         { type = lmpio.INT, shape = rank ~= bad and { 2 } or nil })
    if size > 1 then assert.matches("(rank " .. bad .. ")", e.message, 1, true) end
    if size > 1 then
      open_fails("MPI_ERR_NOT_SAME", "different descriptions", world, path, "w",
                 { type = lmpio.INT, shape = { rank == 0 and 2 or 3 } })
      open_fails("MPI_ERR_NOT_SAME", "some ranks read", world, path, rank == 0 and "r" or "w",
                 rank ~= 0 and { type = lmpio.INT, shape = { 2 } } or nil)
    end
    -- a read takes its description from the header
    local fh = lmpio.npy.open(world, path, "w", { type = lmpio.INT, shape = { 0 } })
    fh:close()
    open_fails("MPI_ERR_ARG", "field 'type': reading takes the description from the header", world, path, "r",
               { type = lmpio.INT })
  end)

  it("refuses a malformed or unsupported header, naming the problem, on every rank", function()
    local path = H.tmpname("m.npy")
    local ok_dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }"
    local data = string.pack("<dd", 1, 2)
    local cases = {
      { "MPI_ERR_IO", "not a .npy file", "\x93NUMPZ\1\0" .. ok_dict },
      { "MPI_ERR_IO", "not a .npy file", "" },
      { "MPI_ERR_IO", "too few for the .npy preamble", "\x93NUMPY\1" },
      { "MPI_ERR_IO", "too few for the .npy 2.0 preamble", "\x93NUMPY\2\0\1\0" },
      { "MPI_ERR_IO", "version 4.0 is not supported", "\x93NUMPY\4\0\0\0\0\0" },
      { "MPI_ERR_IO", "truncated header: 20 of its", npy_bytes(ok_dict):sub(1, 30) },
      { "MPI_ERR_IO", "truncated data: its header promises 16 bytes of data, the file holds 8",
        npy_bytes(ok_dict, data:sub(1, 8)) },
      { "MPI_ERR_IO", "lacks 'shape'", npy_bytes("{'descr': '<f8', 'fortran_order': False}") },
      { "MPI_ERR_IO", "gives 'shape' twice", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (), 'shape': (), }") },
      { "MPI_ERR_IO", "unexpected key 'strides'", npy_bytes("{'descr': '<f8', 'strides': (8,), }") },
      { "MPI_ERR_IO", "neither True nor False", npy_bytes("{'descr': '<f8', 'fortran_order': 0, 'shape': (), }") },
      { "MPI_ERR_IO", "lacks the comma of a tuple", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2), }", data) },
      { "MPI_ERR_IO", "non-negative integers", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", data) },
      { "MPI_ERR_IO", "not a dictionary", npy_bytes("['descr']") },
      { "MPI_ERR_IO", "more than a dictionary", npy_bytes(ok_dict .. " x", data) },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "structured dtypes", npy_bytes("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '|O' (Python objects)", npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<U3' (strings)", npy_bytes("{'descr': '<U3', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<f2' (half precision)", npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<f16' (extended precision)", npy_bytes("{'descr': '<f16', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '' is not supported", npy_bytes("{'descr': '', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<' is not supported", npy_bytes("{'descr': '<', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<i3' is not supported", npy_bytes("{'descr': '<i3', 'fortran_order': False, 'shape': (), }") },
      { "MPI_ERR_UNSUPPORTED_DATAREP", "dtype '<M8[ns]' (dates and times)", npy_bytes("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (), }") },
    }
    for _, c in ipairs(cases) do
      put(path, c[3])
      local e = open_fails(c[1], c[2], world, path, "r")
      assert.is_truthy(e.message:find(path, 1, true), e.message)
    end
    -- "r+" allows data still to be written; the header is right
    put(path, npy_bytes(ok_dict, data:sub(1, 8)))
    local fh <close>, d = lmpio.npy.open(world, path, "r+")
    assert.same({ 2 }, d.shape)
    assert.equal(#npy_bytes(ok_dict), d.offset)
    -- a hand-made header with Python 2's long integers, double quotes, no trailing comma
    put(path, npy_bytes("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (1L, 2L)}", data))
    local f2 <close>, d2 = lmpio.npy.open(world, path, "r")
    assert.same({ 1, 2 }, d2.shape)
    assert.same({ 1, 2 }, f2:read_at_all(0, 2, d2.type):totable())
  end)

  it("closes the file when the header is refused (a bad magic, data cut short)", function()
    -- the module's files still open (lua/file.c keeps them in the registry)
    local function open_files()
      local n = 0
      for _ in pairs(debug.getregistry()["lmpio.open_files"] or {}) do n = n + 1 end
      return n
    end
    local before = open_files()
    local path = H.tmpname("c.npy")
    put(path, "not numpy")
    open_fails("MPI_ERR_IO", "not a .npy file", world, path, "r")
    assert.equal(before, open_files())
    put(path, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", string.rep("\0", 8)))
    open_fails("MPI_ERR_IO", "truncated data", world, path, "r")
    assert.equal(before, open_files())
    -- (the communicator defaults to the world)
    local fh <close> = lmpio.npy.open(path, "w+", { type = lmpio.INT, shape = { size } })
    assert.equal(before + 1, open_files())
    fh:write_at_all(rank, lmpio.array(lmpio.INT, { rank }))
    fh:close()
    local ok, out = python(("assert numpy.load(%q).tolist() == list(range(%d)); print('ok')"):format(path, size))
    assert.is_true(ok, out)
  end)
end)
